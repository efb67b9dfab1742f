"""The mini sequence labeler (DyNet vs PyTorch benchmark of 2017; see the
design notes): a bidirectional GRU encoder and a greedy decoder that makes
one decision per token, fed its own previous decision.

Word embeddings 5,000 x 50, bi-GRU of 51 units per direction over a
minibatch of 5 sentences, then per token: concat(previous action's
embedding (5), previous hidden (52), encoder output (102)) -> Linear -> relu
-> Linear to 45 labels; the prediction is the argmin (the outputs are costs),
the loss the squared error against the cost vector (ones, zero at the true
label). The initial hidden state and action embedding are learned. Adam, lr
0.01. Sentences are synthetic, their lengths cycling through those below.
"""
import numpy

import chainer
import chainer.functions as F
import chainer.links as L
from chainer import initializers

from chainer_fastpath.bench.workloads import (
    import_torch, params, torch_twin, workload)

WORDS, LABELS = 5000, 45
EMBED, UNITS, ACTION, HIDDEN = 50, 51, 5, 52
BATCH = 5
LENGTHS = [13, 32, 35, 12, 16, 10, 21, 25, 23, 17,
           22, 36, 23, 42, 52, 19, 18, 13, 34, 24]


def batches(seed):
    """Returns minibatches ``(words, costs, mask)``, one per five sentences
    of ``LENGTHS``: ``words`` a list of int32 arrays, ``costs`` padded to
    (5, T, 45) and ``mask`` (5, T, 1), zero past a sentence's end."""
    rng = numpy.random.RandomState(seed)
    out = []
    for i in range(0, len(LENGTHS), BATCH):
        lengths = LENGTHS[i:i + BATCH]
        words = [rng.randint(0, WORDS, n).astype(numpy.int32)
                 for n in lengths]
        costs = numpy.ones((BATCH, max(lengths), LABELS), numpy.float32)
        mask = numpy.zeros((BATCH, max(lengths), 1), numpy.float32)
        for b, w in enumerate(words):
            # A label the model can learn: a fixed function of the word.
            costs[b, numpy.arange(len(w)), w * 7 % LABELS] = 0
            mask[b, :len(w)] = 1
        out.append((words, costs, mask))
    return out


class SeqLabeler(chainer.Chain):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.embed = L.EmbedID(WORDS, EMBED)
            self.encoder = L.NStepBiGRU(1, EMBED, UNITS, 0.0)
            self.action_embed = L.EmbedID(LABELS, ACTION)
            self.hidden = L.Linear(ACTION + HIDDEN + 2 * UNITS, HIDDEN)
            self.output = L.Linear(HIDDEN, LABELS)
            self.h0 = chainer.Parameter(initializers.Normal(), (1, HIDDEN))
            self.a0 = chainer.Parameter(initializers.Normal(), (1, ACTION))

    def forward(self, words, costs, mask):
        """Returns the summed squared error of the greedy decode."""
        # Embed all sentences at once and split them again, as Chainer's
        # NStep examples do.
        sections = numpy.cumsum([len(w) for w in words[:-1]])
        xs = F.split_axis(self.embed(numpy.concatenate(words)), sections, 0)
        _, encoded = self.encoder(None, xs)
        encoded = F.pad_sequence(encoded)
        n = len(words)
        h = F.broadcast_to(self.h0, (n, HIDDEN))
        a = F.broadcast_to(self.a0, (n, ACTION))
        loss = 0
        for t in range(encoded.shape[1]):
            h = F.relu(self.hidden(F.concat((a, h, encoded[:, t]))))
            scores = self.output(h)
            loss += F.sum(F.squared_difference(scores, costs[:, t])
                          * mask[:, t])
            a = self.action_embed(F.argmin(scores, axis=1))
        return loss


@workload('seq_labeler', len(LENGTHS) // BATCH)
def make_seq_labeler(seed):
    """One minibatch of 5 sentences per step: forward, backward, Adam."""
    numpy.random.seed(seed)
    data = batches(seed)
    model = SeqLabeler()
    opt = chainer.optimizers.Adam(alpha=0.01)
    opt.setup(model)
    state = {'i': 0, 'loss': 0.0}

    def step():
        words, costs, mask = data[state['i'] % len(data)]
        state['i'] += 1
        model.cleargrads()
        loss = model(words, costs, mask)
        loss.backward()
        opt.update()
        state['loss'] = loss.array

    return step, lambda: dict(params(model), loss=state['loss'])


@torch_twin('seq_labeler')
def make_seq_labeler_torch(seed):
    torch = import_torch()
    nn = torch.nn
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    class SeqLabelerTorch(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(WORDS, EMBED)
            self.encoder = nn.GRU(EMBED, UNITS, batch_first=True,
                                  bidirectional=True)
            self.action_embed = nn.Embedding(LABELS, ACTION)
            self.hidden = nn.Linear(ACTION + HIDDEN + 2 * UNITS, HIDDEN)
            self.output = nn.Linear(HIDDEN, LABELS)
            self.h0 = nn.Parameter(torch.randn(1, HIDDEN))
            self.a0 = nn.Parameter(torch.randn(1, ACTION))

        def forward(self, words, lengths, costs, mask):
            packed = pack_padded_sequence(self.embed(words), lengths,
                                          batch_first=True,
                                          enforce_sorted=False)
            encoded, _ = pad_packed_sequence(self.encoder(packed)[0],
                                             batch_first=True)
            n = words.shape[0]
            h = self.h0.expand(n, HIDDEN)
            a = self.a0.expand(n, ACTION)
            loss = 0
            for t in range(encoded.shape[1]):
                h = torch.relu(self.hidden(torch.cat((a, h, encoded[:, t]),
                                                     1)))
                scores = self.output(h)
                loss = loss + ((scores - costs[:, t]) ** 2
                               * mask[:, t]).sum()
                a = self.action_embed(scores.argmin(1))
            return loss

    torch.manual_seed(seed)
    data = []
    for words, costs, mask in batches(seed):
        padded = numpy.zeros((len(words), costs.shape[1]), numpy.int64)
        for b, w in enumerate(words):
            padded[b, :len(w)] = w
        data.append((torch.from_numpy(padded),
                     torch.tensor([len(w) for w in words]),
                     torch.from_numpy(costs), torch.from_numpy(mask)))
    model = SeqLabelerTorch()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    state = {'i': 0}

    def step():
        batch = data[state['i'] % len(data)]
        state['i'] += 1
        opt.zero_grad()
        loss = model(*batch)
        loss.backward()
        opt.step()

    return step, lambda: params(model)
