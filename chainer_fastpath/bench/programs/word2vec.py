"""Skip-gram word2vec as in Chainer's ``train_word2vec.py``: 100 units,
window 5, minibatch 1,000 centre words, Adam, over a 10,000-word vocabulary
with natural word frequencies; the output layer hierarchical softmax
(``word2vec_hsm``, the script's default) or negative sampling of 5
(``word2vec_ns``). One step is one minibatch."""
import collections

import numpy

import chainer
import chainer.functions as F
import chainer.links as L

from chainer_fastpath.bench.programs import zipf_tokens
from chainer_fastpath.bench.workloads import params, workload

VOCAB, UNITS, WINDOW, BATCH = 10000, 100, 5, 1000


class SkipGram(chainer.Chain):
    def __init__(self, n_vocab, n_units, loss_func):
        super().__init__()
        with self.init_scope():
            self.embed = L.EmbedID(
                n_vocab, n_units, initialW=chainer.initializers.Uniform(
                    1. / n_units))
            self.loss_func = loss_func

    def forward(self, x, contexts):
        e = self.embed(contexts)
        batch_size, n_context, n_units = e.shape
        x = F.broadcast_to(x[:, None], (batch_size, n_context))
        e = F.reshape(e, (batch_size * n_context, n_units))
        x = F.reshape(x, (batch_size * n_context,))
        return self.loss_func(e, x)


def _make(seed, output):
    rng = numpy.random.RandomState(seed)
    numpy.random.seed(seed)
    corpus = zipf_tokens(rng, VOCAB, 20000)
    counts = collections.Counter(corpus.tolist())
    for w in range(VOCAB):
        counts.setdefault(w, 1)
    if output == 'hsm':
        loss_func = L.BinaryHierarchicalSoftmax(
            UNITS, L.BinaryHierarchicalSoftmax.create_huffman_tree(counts))
    else:
        loss_func = L.NegativeSampling(
            UNITS, [counts[w] for w in range(VOCAB)], 5)
    loss_func.W.array[...] = 0
    model = SkipGram(VOCAB, UNITS, loss_func)
    optimizer = chainer.optimizers.Adam()
    optimizer.setup(model)
    centres = numpy.arange(WINDOW, len(corpus) - WINDOW)
    window = numpy.concatenate([numpy.arange(-WINDOW, 0),
                                numpy.arange(1, WINDOW + 1)])
    state = {'i': 0, 'loss': None}

    def step():
        start = state['i'] * BATCH % (len(centres) - BATCH)
        state['i'] += 1
        position = centres[start:start + BATCH]
        contexts = corpus[position[:, None] + window]
        loss = model(corpus[position], contexts)
        model.cleargrads()
        loss.backward()
        optimizer.update()
        state['loss'] = loss.array

    return step, lambda: dict(params(model), loss=state['loss'])


@workload('word2vec_hsm', 2, section='programs')
def make_hsm(seed):
    return _make(seed, 'hsm')


@workload('word2vec_ns', 2, section='programs')
def make_ns(seed):
    return _make(seed, 'ns')
