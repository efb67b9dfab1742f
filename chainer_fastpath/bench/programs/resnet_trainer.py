"""A small ResNet image classifier trained the way users train one with
Chainer's ``Trainer``: residual blocks of two 3x3 convolutions with batch
normalization and ReLU around an identity shortcut (a 1x1 projection where
the width changes), global average pooling, ``L.Classifier``, MomentumSGD
with weight decay; a shuffling ``SerialIterator`` over a ``TupleDataset``
(``concat_examples`` makes the minibatches), ``StandardUpdater``,
``Evaluator`` (batch normalization in test mode), ``LogReport``. 16x16x3
images, widths 16 and 32, minibatch 32. One step is one epoch over 256
training images, then evaluation on 64."""
import tempfile

import numpy

import chainer
import chainer.functions as F
import chainer.links as L

from chainer_fastpath.bench.programs import teacher_labels, trainer_epoch
from chainer_fastpath.bench.workloads import params, workload

SIZE, CLASSES, BATCH, TRAIN, TEST = 16, 10, 32, 256, 64


class ResidualBlock(chainer.Chain):
    def __init__(self, in_channels, out_channels, stride=1):
        super().__init__()
        with self.init_scope():
            self.conv1 = L.Convolution2D(in_channels, out_channels, 3,
                                         stride, 1, nobias=True)
            self.bn1 = L.BatchNormalization(out_channels)
            self.conv2 = L.Convolution2D(out_channels, out_channels, 3, 1,
                                         1, nobias=True)
            self.bn2 = L.BatchNormalization(out_channels)
            if in_channels != out_channels or stride != 1:
                self.shortcut = L.Convolution2D(in_channels, out_channels,
                                                1, stride, nobias=True)
            else:
                self.shortcut = None

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        skip = x if self.shortcut is None else self.shortcut(x)
        return F.relu(h + skip)


class ResNet(chainer.Chain):
    def __init__(self, n_class=CLASSES):
        super().__init__()
        with self.init_scope():
            self.conv = L.Convolution2D(3, 16, 3, 1, 1, nobias=True)
            self.bn = L.BatchNormalization(16)
            self.res1 = ResidualBlock(16, 16)
            self.res2 = ResidualBlock(16, 32, stride=2)
            self.res3 = ResidualBlock(32, 32)
            self.fc = L.Linear(32, n_class)

    def forward(self, x):
        h = F.relu(self.bn(self.conv(x)))
        h = self.res3(self.res2(self.res1(h)))
        h = F.average_pooling_2d(h, h.shape[2:])
        return self.fc(h)


@workload('resnet_trainer', 1, section='programs')
def make(seed):
    rng = numpy.random.RandomState(seed)
    numpy.random.seed(seed)
    x = rng.rand(TRAIN + TEST, 3, SIZE, SIZE).astype(numpy.float32)
    t = teacher_labels(rng, x.reshape(len(x), -1) - 0.5, CLASSES)
    train = chainer.datasets.TupleDataset(x[:TRAIN], t[:TRAIN])
    test = chainer.datasets.TupleDataset(x[TRAIN:], t[TRAIN:])
    model = L.Classifier(ResNet())
    optimizer = chainer.optimizers.MomentumSGD(0.05)
    optimizer.setup(model)
    optimizer.add_hook(chainer.optimizer_hooks.WeightDecay(1e-4))
    out = tempfile.mkdtemp(prefix='cfp-bench-')
    state = {'log': None}

    def step():
        # The shuffle draws from numpy.random, seeded above: the same
        # batches stock and patched.
        state['log'] = trainer_epoch(model, optimizer, train, test, BATCH,
                                     out, shuffle=True)

    def result():
        return dict(params(model), **state['log'])

    return step, result
