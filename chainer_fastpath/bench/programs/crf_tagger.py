"""Part-of-speech tagger as in Chainer's ``postagging.py``: word features
from an ``EmbedID`` straight to a linear-chain CRF (``L.CRF1d``) over 45
tags, sentences sorted by length and transposed, Viterbi decoding for the
accuracy, Adam with weight decay, minibatch 30. One step is one
minibatch."""
import numpy

import chainer
import chainer.functions as F
import chainer.links as L

from chainer_fastpath.bench.programs import zipf_tokens
from chainer_fastpath.bench.workloads import params, workload

VOCAB, TAGS, BATCH, SENTENCES = 20000, 45, 30, 300


class CRF(chainer.Chain):
    def __init__(self, n_vocab, n_pos):
        super().__init__()
        with self.init_scope():
            self.feature = L.EmbedID(n_vocab, n_pos)
            self.crf = L.CRF1d(n_pos)

    def forward(self, xs, ys):
        # CRF1d wants the sequences longest first, then transposed.
        inds = numpy.argsort([-len(x) for x in xs]).astype(numpy.int32)
        xs = F.transpose_sequence([xs[i] for i in inds])
        ys = F.transpose_sequence([ys[i] for i in inds])
        hs = [self.feature(x) for x in xs]
        loss = self.crf(hs, ys)
        _, predict = self.crf.argmax(hs)
        correct = sum(int((y.array == p).sum()) for y, p in zip(ys, predict))
        total = sum(len(y) for y in ys)
        return loss, correct / total


@workload('crf_tagger', 4, section='programs')
def make(seed):
    rng = numpy.random.RandomState(seed)
    numpy.random.seed(seed)
    words = [zipf_tokens(rng, VOCAB, n)
             for n in rng.randint(5, 45, SENTENCES)]
    tags = [(w * 7 % TAGS).astype(numpy.int32) for w in words]
    model = CRF(VOCAB, TAGS)
    optimizer = chainer.optimizers.Adam()
    optimizer.setup(model)
    optimizer.add_hook(chainer.optimizer_hooks.WeightDecay(0.0001))
    state = {'i': 0, 'loss': None, 'accuracy': None}

    def step():
        start = state['i'] * BATCH % SENTENCES
        state['i'] += 1
        loss, state['accuracy'] = model(words[start:start + BATCH],
                                        tags[start:start + BATCH])
        model.cleargrads()
        loss.backward()
        optimizer.update()
        state['loss'] = loss.array

    return step, lambda: dict(params(model), loss=state['loss'],
                              accuracy=numpy.float64(state['accuracy']))
