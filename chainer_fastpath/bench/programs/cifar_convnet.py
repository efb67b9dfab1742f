"""CIFAR-10 classifier in the style of Chainer's ``train_cifar.py`` VGG:
blocks of 3x3 convolutions with batch normalization and ReLU, max pooling,
dropout, a fully connected head; MomentumSGD (lr 0.05) with weight decay,
minibatch 64 of 32x32x3 images. Three blocks of 32, 64 and 128 channels
instead of VGG-16's five up to 512, so that one step takes seconds, not
minutes, on a CPU. One step is one minibatch."""
import numpy

import chainer
import chainer.functions as F
import chainer.links as L

from chainer_fastpath.bench.workloads import params, workload

BATCH, CLASSES = 64, 10


class Block(chainer.Chain):
    def __init__(self, out_channels, ksize, pad=1):
        super().__init__()
        with self.init_scope():
            self.conv = L.Convolution2D(None, out_channels, ksize, pad=pad,
                                        nobias=True)
            self.bn = L.BatchNormalization(out_channels)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class ConvNet(chainer.Chain):
    def __init__(self, class_labels=CLASSES):
        super().__init__()
        with self.init_scope():
            self.block1_1 = Block(32, 3)
            self.block1_2 = Block(32, 3)
            self.block2_1 = Block(64, 3)
            self.block2_2 = Block(64, 3)
            self.block3_1 = Block(128, 3)
            self.block3_2 = Block(128, 3)
            self.fc1 = L.Linear(None, 256, nobias=True)
            self.bn_fc1 = L.BatchNormalization(256)
            self.fc2 = L.Linear(None, class_labels, nobias=True)

    def forward(self, x):
        h = self.block1_1(x)
        h = F.dropout(h, ratio=0.3)
        h = F.max_pooling_2d(self.block1_2(h), ksize=2, stride=2)
        h = F.dropout(self.block2_1(h), ratio=0.4)
        h = F.max_pooling_2d(self.block2_2(h), ksize=2, stride=2)
        h = F.dropout(self.block3_1(h), ratio=0.4)
        h = F.max_pooling_2d(self.block3_2(h), ksize=2, stride=2)
        h = F.dropout(h, ratio=0.5)
        h = F.relu(self.bn_fc1(self.fc1(h)))
        return self.fc2(F.dropout(h, ratio=0.5))


@workload('cifar_convnet', 1, section='programs')
def make(seed):
    rng = numpy.random.RandomState(seed)
    numpy.random.seed(seed)
    images = rng.rand(4 * BATCH, 3, 32, 32).astype(numpy.float32)
    labels = rng.randint(0, CLASSES, 4 * BATCH).astype(numpy.int32)
    model = L.Classifier(ConvNet())
    optimizer = chainer.optimizers.MomentumSGD(0.05)
    optimizer.setup(model)
    optimizer.add_hook(chainer.optimizer_hooks.WeightDecay(5e-4))
    state = {'i': 0, 'loss': None}

    def step():
        start = state['i'] % 4 * BATCH
        state['i'] += 1
        loss = model(images[start:start + BATCH],
                     labels[start:start + BATCH])
        model.cleargrads()
        loss.backward()
        optimizer.update()
        state['loss'] = loss.array

    return step, lambda: dict(params(model), loss=state['loss'])
