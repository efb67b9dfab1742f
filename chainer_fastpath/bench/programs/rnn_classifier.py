"""Text classification with an RNN encoder as in Chainer's
``text_classification`` example: embeddings, a one-layer ``NStepLSTM``
(dropout 0.1) whose last hidden state, after dropout, feeds a linear
classifier; ``softmax_cross_entropy`` and ``accuracy`` reported from the
model; Adam; a ``Trainer`` with ``Evaluator``, ``LogReport`` and
``PrintReport``; sentences of 5 to 40 words, minibatch 64, 300 units
(the example's default) over a 5,000-word vocabulary. One step is one epoch
over 512 training sentences, then evaluation on 128."""
import tempfile

import numpy

import chainer
import chainer.functions as F
import chainer.links as L
from chainer import reporter

from chainer_fastpath.bench.programs import trainer_epoch, zipf_tokens
from chainer_fastpath.bench.workloads import params, workload

UNITS, VOCAB, CLASSES, BATCH, TRAIN, TEST = 300, 5000, 4, 64, 512, 128


def sequence_embed(embed, xs, dropout=0.):
    x_len = [len(x) for x in xs]
    x_section = numpy.cumsum(x_len[:-1])
    ex = embed(F.concat(xs, axis=0))
    ex = F.dropout(ex, ratio=dropout)
    return F.split_axis(ex, x_section, 0)


class RNNEncoder(chainer.Chain):
    def __init__(self, n_layers, n_vocab, n_units, dropout=0.1):
        super().__init__()
        with self.init_scope():
            self.embed = L.EmbedID(n_vocab, n_units, ignore_label=-1)
            self.encoder = L.NStepLSTM(n_layers, n_units, n_units, dropout)
        self.out_units = n_units
        self.dropout = dropout

    def forward(self, xs):
        exs = sequence_embed(self.embed, xs, self.dropout)
        last_h, last_c, ys = self.encoder(None, None, exs)
        return last_h[-1]


class TextClassifier(chainer.Chain):
    def __init__(self, encoder, n_class, dropout=0.1):
        super().__init__()
        with self.init_scope():
            self.encoder = encoder
            self.output = L.Linear(encoder.out_units, n_class)
        self.dropout = dropout

    def forward(self, xs, ys):
        concat_outputs = self.predict(xs)
        concat_truths = F.concat(ys, axis=0)
        loss = F.softmax_cross_entropy(concat_outputs, concat_truths)
        accuracy = F.accuracy(concat_outputs, concat_truths)
        reporter.report({'loss': loss.array}, self)
        reporter.report({'accuracy': accuracy.array}, self)
        return loss

    def predict(self, xs):
        encodings = F.dropout(self.encoder(xs), ratio=self.dropout)
        return self.output(encodings)


def convert_seq(batch, device=None):
    return {'xs': [x for x, _ in batch], 'ys': [y for _, y in batch]}


def _dataset(rng, n):
    data = []
    for _ in range(n):
        words = zipf_tokens(rng, VOCAB, rng.randint(5, 41))
        # A label the words decide: something to learn.
        data.append((words, numpy.array([words.sum() % CLASSES],
                                        numpy.int32)))
    return data


@workload('rnn_classifier', 1, section='programs')
def make(seed):
    rng = numpy.random.RandomState(seed)
    numpy.random.seed(seed)
    train, test = _dataset(rng, TRAIN), _dataset(rng, TEST)
    model = TextClassifier(RNNEncoder(1, VOCAB, UNITS), CLASSES)
    optimizer = chainer.optimizers.Adam()
    optimizer.setup(model)
    out = tempfile.mkdtemp(prefix='cfp-bench-')
    state = {'log': None}

    def step():
        # Iterators in order: the same batches stock and patched.
        state['log'] = trainer_epoch(model, optimizer, train, test, BATCH,
                                     out, converter=convert_seq,
                                     print_report=True)

    def result():
        return dict(params(model), **state['log'])

    return step, result
