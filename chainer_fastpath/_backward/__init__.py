"""The backward engine behind ``_fast_backward``'s entry points
(``Variable.backward``, ``chainer._backprop._backprop_to_all``): a
compiled port of stock's ``_backprop_to_all``, ``backprop_step`` and
``GradTable``, one concern per module (docs/design/backward.md).

- ``engine``: the loop over candidate function nodes, from the outputs'
  gradients to the leaves';
- ``heap``: the candidates, popped by rank and arrival as stock's ``heapq``;
- ``step``: one function node's backward between its hooks;
- ``grad_table``: the gradients per node, the sums the engine owns and adds
  into in place;
- ``fpe_replay``: what NumPy would do about a floating-point exception of
  such a sum, done as stock's ``Add.forward`` does it;
- ``graph_reads``: stock's property reads of the graph's objects, as
  attribute reads for the exact classes.
"""
