"""Text classification CNN as in Chainer's ``text_classification``
example (``CNNEncoder``): 300-unit embeddings of padded sentences, three
convolutions of widths 3, 4, 5 with max over time, a one-layer MLP, dropout
0.4, softmax cross entropy and accuracy, Adam with weight decay, minibatch
64 sentences over a 20,000-word vocabulary. One step is one minibatch."""
import numpy

import chainer
import chainer.functions as F
import chainer.links as L

from chainer_fastpath.bench.programs import zipf_tokens
from chainer_fastpath.bench.workloads import params, workload

VOCAB, UNITS, CLASSES, BATCH, DROPOUT = 20000, 300, 2, 64, 0.4


def block_embed(embed, x, dropout=0.):
    e = F.dropout(embed(x), ratio=dropout)
    e = F.transpose(e, (0, 2, 1))
    return e[:, :, :, None]


class MLP(chainer.ChainList):
    def __init__(self, n_layers, n_units, dropout=0.1):
        super().__init__()
        for _ in range(n_layers):
            self.add_link(L.Linear(None, n_units))
        self.dropout = dropout
        self.out_units = n_units

    def forward(self, x):
        for link in self.children():
            x = F.relu(link(F.dropout(x, ratio=self.dropout)))
        return x


class CNNEncoder(chainer.Chain):
    def __init__(self, n_layers, n_vocab, n_units, dropout=0.1):
        out_units = n_units // 3
        super().__init__()
        with self.init_scope():
            self.embed = L.EmbedID(n_vocab, n_units, ignore_label=-1)
            self.cnn_w3 = L.Convolution2D(n_units, out_units, ksize=(3, 1),
                                          pad=(2, 0), nobias=True)
            self.cnn_w4 = L.Convolution2D(n_units, out_units, ksize=(4, 1),
                                          pad=(3, 0), nobias=True)
            self.cnn_w5 = L.Convolution2D(n_units, out_units, ksize=(5, 1),
                                          pad=(4, 0), nobias=True)
            self.mlp = MLP(n_layers, out_units * 3, dropout)
        self.out_units = out_units * 3
        self.dropout = dropout

    def forward(self, xs):
        x_block = chainer.dataset.convert.concat_examples(xs, padding=-1)
        ex_block = block_embed(self.embed, x_block, self.dropout)
        h = F.concat([F.max(self.cnn_w3(ex_block), axis=2),
                      F.max(self.cnn_w4(ex_block), axis=2),
                      F.max(self.cnn_w5(ex_block), axis=2)], axis=1)
        h = F.dropout(F.relu(h), ratio=self.dropout)
        return self.mlp(h)


class TextClassifier(chainer.Chain):
    def __init__(self, encoder, n_class, dropout=0.1):
        super().__init__()
        with self.init_scope():
            self.encoder = encoder
            self.output = L.Linear(encoder.out_units, n_class)
        self.dropout = dropout

    def forward(self, xs, ys):
        encodings = F.dropout(self.encoder(xs), ratio=self.dropout)
        outputs = self.output(encodings)
        truths = F.concat(ys, axis=0)
        loss = F.softmax_cross_entropy(outputs, truths)
        accuracy = F.accuracy(outputs, truths)
        return loss, accuracy


@workload('text_cnn', 2, section='programs')
def make(seed):
    rng = numpy.random.RandomState(seed)
    numpy.random.seed(seed)
    sentences = [zipf_tokens(rng, VOCAB, n)
                 for n in rng.randint(5, 50, 10 * BATCH)]
    labels = [numpy.array([int(s[:3].sum()) % CLASSES], numpy.int32)
              for s in sentences]
    model = TextClassifier(CNNEncoder(1, VOCAB, UNITS, DROPOUT), CLASSES)
    optimizer = chainer.optimizers.Adam()
    optimizer.setup(model)
    optimizer.add_hook(chainer.optimizer_hooks.WeightDecay(1e-4))
    state = {'i': 0, 'loss': None, 'accuracy': None}

    def step():
        start = state['i'] % 10 * BATCH
        state['i'] += 1
        loss, accuracy = model(sentences[start:start + BATCH],
                               labels[start:start + BATCH])
        model.cleargrads()
        loss.backward()
        optimizer.update()
        state['loss'], state['accuracy'] = loss.array, accuracy.array

    return step, lambda: dict(params(model), loss=state['loss'],
                              accuracy=state['accuracy'])
