"""End-to-end memory network as in Chainer's ``memnn`` example (bAbI):
bag-of-words sentence encoding, 3 hops with adjacent weight sharing and
temporal encoding, 20 units, memory of 50 sentences, Adam, minibatch 100 of
(story, question, answer) over a 40-word vocabulary. One step is one
minibatch."""
import numpy

import chainer
import chainer.functions as F
import chainer.links as L
from chainer import initializers

from chainer_fastpath.bench.workloads import params, workload

UNITS, VOCAB, MEMORY, HOPS, BATCH, WORDS = 20, 40, 50, 3, 100, 8


def bow_encode(embed, sentences):
    return F.sum(embed(sentences), axis=-2)


class Memory:
    def __init__(self, A, C, TA, TC, encoder):
        self.A, self.C, self.TA, self.TC = A, C, TA, TC
        self.encoder = encoder

    def register_all(self, sentences):
        self.m = self.encoder(self.A, sentences)
        self.c = self.encoder(self.C, sentences)

    def query(self, u):
        size = self.m.shape[1]
        inds = numpy.arange(size - 1, -1, -1, dtype=numpy.int32)
        tm = F.broadcast_to(self.TA(inds), self.m.shape)
        tc = F.broadcast_to(self.TC(inds), self.c.shape)
        p = F.softmax(F.matmul(self.m + tm, F.expand_dims(u, -1)), axis=1)
        o = F.matmul(F.swapaxes(self.c + tc, 2, 1), p)
        return F.squeeze(o, -1) + u


class MemNN(chainer.Chain):
    def __init__(self, n_units, n_vocab, encoder, max_memory, hops):
        super().__init__()
        with self.init_scope():
            self.embeds = chainer.ChainList()
            self.temporals = chainer.ChainList()
        normal = initializers.Normal()
        for _ in range(hops + 1):
            self.embeds.append(L.EmbedID(n_vocab, n_units, initialW=normal))
            self.temporals.append(
                L.EmbedID(max_memory, n_units, initialW=normal))
        self.memories = [
            Memory(self.embeds[i], self.embeds[i + 1], self.temporals[i],
                   self.temporals[i + 1], encoder) for i in range(hops)]
        self.encoder = encoder

    def fix_ignore_label(self):
        for embed in self.embeds:
            embed.W.array[0, :] = 0

    def forward(self, sentences, question):
        for memory in self.memories:
            memory.register_all(sentences)
        u = self.encoder(self.embeds[0], question)
        for memory in self.memories:
            u = memory.query(u)
        return F.linear(u, self.embeds[-1].W)


@workload('memnn', 10, section='programs')
def make(seed):
    rng = numpy.random.RandomState(seed)
    numpy.random.seed(seed)
    n = 10 * BATCH
    stories = rng.randint(1, VOCAB, (n, MEMORY, WORDS)).astype(numpy.int32)
    # Word 0 pads, as in the example's data.
    stories[:, :, 6:] *= rng.rand(n, MEMORY, 2) < 0.5
    questions = rng.randint(1, VOCAB, (n, WORDS)).astype(numpy.int32)
    answers = stories[numpy.arange(n), questions[:, 0] % MEMORY, 0]
    model = L.Classifier(MemNN(UNITS, VOCAB, bow_encode, MEMORY, HOPS),
                         label_key='answer')
    optimizer = chainer.optimizers.Adam()
    optimizer.setup(model)
    state = {'i': 0, 'loss': None}

    def step():
        start = state['i'] % 10 * BATCH
        state['i'] += 1
        batch = slice(start, start + BATCH)
        loss = model(stories[batch], questions[batch],
                     answer=answers[batch])
        model.cleargrads()
        loss.backward()
        optimizer.update()
        model.predictor.fix_ignore_label()
        state['loss'] = loss.array

    return step, lambda: dict(params(model), loss=state['loss'])
