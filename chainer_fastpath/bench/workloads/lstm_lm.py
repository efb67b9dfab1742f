"""A small LSTM language model, written as Chainer's PTB example is:
``EmbedID -> LSTM -> Linear``, truncated BPTT with ``unchain_backward``, SGD
with gradient clipping. Vocabulary 1,000, 64 units, batch 8, BPTT 20, on a
synthetic token stream.
"""
import numpy

import chainer
import chainer.functions as F
import chainer.links as L

from chainer_fastpath.bench.workloads import (
    import_torch, params, torch_twin, workload)

VOCAB, UNITS, BATCH, BPTT = 1000, 64, 8, 20
SEGMENTS = 16    # the stream is this many BPTT segments long, then repeats


def stream(seed):
    """Returns ``(x, t)``: int32 arrays (BATCH, SEGMENTS * BPTT), ``t`` the
    next token of each ``x``: eight parallel positions in one stream."""
    rng = numpy.random.RandomState(seed)
    # Each token follows from the previous one most of the time, so there
    # is something to learn.
    n = BATCH * SEGMENTS * BPTT + 1
    tokens = numpy.empty(n, numpy.int32)
    tokens[0] = 0
    jumps = rng.randint(0, VOCAB, n)
    follow = rng.rand(n) < 0.7
    for i in range(1, n):
        tokens[i] = ((tokens[i - 1] * 7 + 1) % VOCAB if follow[i]
                     else jumps[i])
    x = tokens[:-1].reshape(BATCH, -1)
    t = tokens[1:].reshape(BATCH, -1)
    return x, t


class RNNLM(chainer.Chain):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.embed = L.EmbedID(VOCAB, UNITS)
            self.lstm = L.LSTM(UNITS, UNITS)
            self.out = L.Linear(UNITS, VOCAB)

    def forward(self, x):
        return self.out(self.lstm(self.embed(x)))


@workload('lstm_lm', 3)
def make_lstm_lm(seed):
    """One BPTT segment per step: 20 tokens forward, backward, SGD."""
    numpy.random.seed(seed)
    x, t = stream(seed)
    model = RNNLM()
    opt = chainer.optimizers.SGD(lr=1.0)
    opt.setup(model)
    opt.add_hook(chainer.optimizer_hooks.GradientClipping(5.0))
    state = {'i': 0, 'loss': 0.0}

    def step():
        start = state['i'] % SEGMENTS * BPTT
        state['i'] += 1
        loss = 0
        for j in range(start, start + BPTT):
            loss += F.softmax_cross_entropy(model(x[:, j]), t[:, j])
        model.cleargrads()
        loss.backward()
        loss.unchain_backward()    # truncate: the state carries on
        opt.update()
        state['loss'] = loss.array

    return step, lambda: dict(params(model), loss=state['loss'])


@torch_twin('lstm_lm')
def make_lstm_lm_torch(seed):
    torch = import_torch()
    nn = torch.nn

    class RNNLMTorch(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(VOCAB, UNITS)
            self.lstm = nn.LSTM(UNITS, UNITS, batch_first=True)
            self.out = nn.Linear(UNITS, VOCAB)

        def forward(self, x, hidden):
            h, hidden = self.lstm(self.embed(x), hidden)
            return self.out(h), hidden

    torch.manual_seed(seed)
    x, t = (torch.from_numpy(a.astype(numpy.int64)) for a in stream(seed))
    model = RNNLMTorch()
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    state = {'i': 0, 'hidden': None}

    def step():
        start = state['i'] % SEGMENTS * BPTT
        state['i'] += 1
        hidden = state['hidden']
        if hidden is not None:
            hidden = tuple(h.detach() for h in hidden)
        logits, state['hidden'] = model(x[:, start:start + BPTT], hidden)
        # Summed over the segment's steps, as the Chainer loop sums them.
        loss = nn.functional.cross_entropy(
            logits.reshape(-1, VOCAB),
            t[:, start:start + BPTT].reshape(-1)) * BPTT
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()

    return step, lambda: params(model)
