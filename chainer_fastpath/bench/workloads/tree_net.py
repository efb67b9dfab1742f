"""A recursive neural network over binary trees, as Chainer's sentiment
example writes one: a leaf is a word embedding, an inner node
``tanh(Linear(concat(left, right)))``, a 5-class softmax at the root. Hidden
32, random trees of 10-30 leaves, one tree per step, Adam.
"""
import numpy

import chainer
import chainer.functions as F
import chainer.links as L

from chainer_fastpath.bench.workloads import (
    import_torch, params, torch_twin, workload)

VOCAB, UNITS, CLASSES = 1000, 32, 5
TREES = 8    # distinct trees, taken in turn: one round per repeat


def _tree(rng, words):
    """A random binary tree over ``words``: a word id, or (left, right)."""
    if len(words) == 1:
        return int(words[0])
    split = rng.randint(1, len(words))
    return (_tree(rng, words[:split]), _tree(rng, words[split:]))


def trees(seed):
    """Returns ``TREES`` pairs ``(tree, label)`` with 10-30 leaves each."""
    rng = numpy.random.RandomState(seed)
    out = []
    for _ in range(TREES):
        words = rng.randint(0, VOCAB, rng.randint(10, 31))
        out.append((_tree(rng, words), int(words.sum() % CLASSES)))
    return out


class RecursiveNet(chainer.Chain):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.embed = L.EmbedID(VOCAB, UNITS)
            self.combine = L.Linear(2 * UNITS, UNITS)
            self.classify = L.Linear(UNITS, CLASSES)

    def encode(self, tree):
        if isinstance(tree, tuple):
            left, right = self.encode(tree[0]), self.encode(tree[1])
            return F.tanh(self.combine(F.concat((left, right))))
        return self.embed(numpy.array([tree], numpy.int32))

    def forward(self, tree, label):
        return F.softmax_cross_entropy(
            self.classify(self.encode(tree)),
            numpy.array([label], numpy.int32))


@workload('tree_net', TREES)
def make_tree_net(seed):
    """One tree per step: forward, loss at the root, backward, Adam."""
    numpy.random.seed(seed)
    data = trees(seed)
    model = RecursiveNet()
    opt = chainer.optimizers.Adam()
    opt.setup(model)
    state = {'i': 0, 'loss': 0.0}

    def step():
        tree, label = data[state['i'] % len(data)]
        state['i'] += 1
        model.cleargrads()
        loss = model(tree, label)
        loss.backward()
        opt.update()
        state['loss'] = loss.array

    return step, lambda: dict(params(model), loss=state['loss'])


@torch_twin('tree_net')
def make_tree_net_torch(seed):
    torch = import_torch()
    nn = torch.nn

    class RecursiveNetTorch(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(VOCAB, UNITS)
            self.combine = nn.Linear(2 * UNITS, UNITS)
            self.classify = nn.Linear(UNITS, CLASSES)

        def encode(self, tree):
            if isinstance(tree, tuple):
                left, right = self.encode(tree[0]), self.encode(tree[1])
                return torch.tanh(self.combine(torch.cat((left, right), 1)))
            return self.embed(torch.tensor([tree]))

        def forward(self, tree, label):
            return nn.functional.cross_entropy(
                self.classify(self.encode(tree)), torch.tensor([label]))

    torch.manual_seed(seed)
    data = trees(seed)
    model = RecursiveNetTorch()
    opt = torch.optim.Adam(model.parameters())
    state = {'i': 0}

    def step():
        tree, label = data[state['i'] % len(data)]
        state['i'] += 1
        opt.zero_grad()
        model(tree, label).backward()
        opt.step()

    return step, lambda: params(model)
