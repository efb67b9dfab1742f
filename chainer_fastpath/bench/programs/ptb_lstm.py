"""PTB language model as in Chainer's ``train_ptb.py``: EmbedID, two LSTMs
and a Linear of 650 units with dropout before each, over a 10,000-word
vocabulary, minibatch 20, truncated BPTT of 35 with ``unchain_backward``,
SGD (lr 1) with gradient clipping. One step is one BPTT segment."""
import numpy

import chainer
import chainer.functions as F
import chainer.links as L

from chainer_fastpath.bench.programs import zipf_tokens
from chainer_fastpath.bench.workloads import params, workload

VOCAB, UNITS, BATCH, BPROP = 10000, 650, 20, 35


class RNNForLM(chainer.Chain):
    def __init__(self, n_vocab, n_units):
        super().__init__()
        with self.init_scope():
            self.embed = L.EmbedID(n_vocab, n_units)
            self.l1 = L.LSTM(n_units, n_units)
            self.l2 = L.LSTM(n_units, n_units)
            self.l3 = L.Linear(n_units, n_vocab)
        for param in self.params():
            param.array[...] = numpy.random.uniform(-0.1, 0.1, param.shape)

    def forward(self, x):
        h0 = self.embed(x)
        h1 = self.l1(F.dropout(h0))
        h2 = self.l2(F.dropout(h1))
        return self.l3(F.dropout(h2))


@workload('ptb_lstm', 1, section='programs')
def make(seed):
    rng = numpy.random.RandomState(seed)
    numpy.random.seed(seed)
    words = zipf_tokens(rng, VOCAB, BATCH * BPROP * 8 + 1)
    offsets = numpy.arange(BATCH) * ((len(words) - 1) // BATCH)
    model = L.Classifier(RNNForLM(VOCAB, UNITS))
    model.compute_accuracy = False
    optimizer = chainer.optimizers.SGD(lr=1.0)
    optimizer.setup(model)
    optimizer.add_hook(chainer.optimizer_hooks.GradientClipping(5.0))
    state = {'i': 0, 'loss': None}

    def step():
        loss = 0
        for _ in range(BPROP):
            i = state['i'] % (len(words) // BATCH - 1)
            state['i'] += 1
            loss += model(words[offsets + i], words[offsets + i + 1])
        model.cleargrads()
        loss.backward()
        loss.unchain_backward()
        optimizer.update()
        state['loss'] = loss.array

    return step, lambda: dict(params(model), loss=state['loss'])
