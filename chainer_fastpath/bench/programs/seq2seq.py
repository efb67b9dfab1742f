"""Sequence to sequence as in Chainer's ``seq2seq.py``: source and target
embeddings, an ``NStepLSTM`` encoder and decoder with dropout 0.1, a linear
output over the concatenated decoder states, summed softmax cross entropy,
Adam, minibatch 64 sentence pairs. Two layers of 256 units and 5,000-word
vocabularies instead of the script's three of 1,024 and 40,000 (WMT),
whose output layer alone would be minutes of BLAS per step here. One step
is one minibatch."""
import numpy

import chainer
import chainer.functions as F
import chainer.links as L

from chainer_fastpath.bench.programs import zipf_tokens
from chainer_fastpath.bench.workloads import params, workload

LAYERS, UNITS, VOCAB, BATCH, EOS = 2, 256, 5000, 64, 0


def sequence_embed(embed, xs):
    x_len = [len(x) for x in xs]
    x_section = numpy.cumsum(x_len[:-1])
    ex = embed(F.concat(xs, axis=0))
    return F.split_axis(ex, x_section, 0)


class Seq2seq(chainer.Chain):
    def __init__(self, n_layers, n_source_vocab, n_target_vocab, n_units):
        super().__init__()
        with self.init_scope():
            self.embed_x = L.EmbedID(n_source_vocab, n_units)
            self.embed_y = L.EmbedID(n_target_vocab, n_units)
            self.encoder = L.NStepLSTM(n_layers, n_units, n_units, 0.1)
            self.decoder = L.NStepLSTM(n_layers, n_units, n_units, 0.1)
            self.W = L.Linear(n_units, n_target_vocab)

    def forward(self, xs, ys):
        xs = [x[::-1] for x in xs]
        eos = numpy.array([EOS], numpy.int32)
        ys_in = [F.concat([eos, y], axis=0) for y in ys]
        ys_out = [F.concat([y, eos], axis=0) for y in ys]
        exs = sequence_embed(self.embed_x, xs)
        eys = sequence_embed(self.embed_y, ys_in)
        hx, cx, _ = self.encoder(None, None, exs)
        _, _, os = self.decoder(hx, cx, eys)
        concat_os = F.concat(os, axis=0)
        concat_ys_out = F.concat(ys_out, axis=0)
        return F.sum(F.softmax_cross_entropy(
            self.W(concat_os), concat_ys_out, reduce='no')) / len(xs)


@workload('seq2seq', 1, section='programs')
def make(seed):
    rng = numpy.random.RandomState(seed)
    numpy.random.seed(seed)
    sources = [zipf_tokens(rng, VOCAB - 1, n) + 1
               for n in rng.randint(5, 40, 4 * BATCH)]
    targets = [(s[::-1] * 3 % (VOCAB - 1) + 1).astype(numpy.int32)
               for s in sources]
    model = Seq2seq(LAYERS, VOCAB, VOCAB, UNITS)
    optimizer = chainer.optimizers.Adam()
    optimizer.setup(model)
    state = {'i': 0, 'loss': None}

    def step():
        start = state['i'] % 4 * BATCH
        state['i'] += 1
        loss = model(sources[start:start + BATCH],
                     targets[start:start + BATCH])
        model.cleargrads()
        loss.backward()
        optimizer.update()
        state['loss'] = loss.array

    return step, lambda: dict(params(model), loss=state['loss'])
