"""DCGAN as in Chainer's ``dcgan`` example: a generator from 100-d noise
through a linear layer and four deconvolutions with batch normalization to
32x32x3 images, a discriminator of seven convolutions with batch
normalization and leaky ReLU, softplus losses, two Adam optimizers (alpha
2e-4, beta1 0.5) with weight decay, minibatch 50. Base width 128 channels
instead of the example's 512 (16x fewer multiply-adds). One step is one
update of both networks."""
import numpy

import chainer
import chainer.functions as F
import chainer.links as L

from chainer_fastpath.bench.workloads import params, workload

HIDDEN, CH, WIDTH, BATCH = 100, 128, 4, 50


def add_noise(h, sigma=0.2):
    if not chainer.config.train:
        return h
    return h + sigma * numpy.random.randn(*h.shape).astype(h.dtype)


class Generator(chainer.Chain):
    def __init__(self, n_hidden=HIDDEN, bottom_width=WIDTH, ch=CH,
                 wscale=0.02):
        super().__init__()
        self.n_hidden, self.ch, self.bottom_width = n_hidden, ch, bottom_width
        with self.init_scope():
            w = chainer.initializers.Normal(wscale)
            self.l0 = L.Linear(n_hidden, bottom_width * bottom_width * ch,
                               initialW=w)
            self.dc1 = L.Deconvolution2D(ch, ch // 2, 4, 2, 1, initialW=w)
            self.dc2 = L.Deconvolution2D(ch // 2, ch // 4, 4, 2, 1,
                                         initialW=w)
            self.dc3 = L.Deconvolution2D(ch // 4, ch // 8, 4, 2, 1,
                                         initialW=w)
            self.dc4 = L.Deconvolution2D(ch // 8, 3, 3, 1, 1, initialW=w)
            self.bn0 = L.BatchNormalization(bottom_width * bottom_width * ch)
            self.bn1 = L.BatchNormalization(ch // 2)
            self.bn2 = L.BatchNormalization(ch // 4)
            self.bn3 = L.BatchNormalization(ch // 8)

    def make_hidden(self, batchsize):
        return numpy.random.uniform(-1, 1, (batchsize, self.n_hidden, 1, 1)
                                    ).astype(numpy.float32)

    def forward(self, z):
        h = F.reshape(F.relu(self.bn0(self.l0(z))),
                      (len(z), self.ch, self.bottom_width, self.bottom_width))
        h = F.relu(self.bn1(self.dc1(h)))
        h = F.relu(self.bn2(self.dc2(h)))
        h = F.relu(self.bn3(self.dc3(h)))
        return F.sigmoid(self.dc4(h))


class Discriminator(chainer.Chain):
    def __init__(self, ch=CH, wscale=0.02):
        super().__init__()
        w = chainer.initializers.Normal(wscale)
        with self.init_scope():
            self.c0_0 = L.Convolution2D(3, ch // 8, 3, 1, 1, initialW=w)
            self.c0_1 = L.Convolution2D(ch // 8, ch // 4, 4, 2, 1, initialW=w)
            self.c1_0 = L.Convolution2D(ch // 4, ch // 4, 3, 1, 1, initialW=w)
            self.c1_1 = L.Convolution2D(ch // 4, ch // 2, 4, 2, 1, initialW=w)
            self.c2_0 = L.Convolution2D(ch // 2, ch // 2, 3, 1, 1, initialW=w)
            self.c2_1 = L.Convolution2D(ch // 2, ch // 1, 4, 2, 1, initialW=w)
            self.c3_0 = L.Convolution2D(ch // 1, ch // 1, 3, 1, 1, initialW=w)
            self.l4 = L.Linear(WIDTH * WIDTH * ch, 1, initialW=w)
            self.bn0_1 = L.BatchNormalization(ch // 4, use_gamma=False)
            self.bn1_0 = L.BatchNormalization(ch // 4, use_gamma=False)
            self.bn1_1 = L.BatchNormalization(ch // 2, use_gamma=False)
            self.bn2_0 = L.BatchNormalization(ch // 2, use_gamma=False)
            self.bn2_1 = L.BatchNormalization(ch // 1, use_gamma=False)
            self.bn3_0 = L.BatchNormalization(ch // 1, use_gamma=False)

    def forward(self, x):
        h = add_noise(x)
        h = F.leaky_relu(add_noise(self.c0_0(h)))
        h = F.leaky_relu(add_noise(self.bn0_1(self.c0_1(h))))
        h = F.leaky_relu(add_noise(self.bn1_0(self.c1_0(h))))
        h = F.leaky_relu(add_noise(self.bn1_1(self.c1_1(h))))
        h = F.leaky_relu(add_noise(self.bn2_0(self.c2_0(h))))
        h = F.leaky_relu(add_noise(self.bn2_1(self.c2_1(h))))
        h = F.leaky_relu(add_noise(self.bn3_0(self.c3_0(h))))
        return self.l4(h)


def make_optimizer(model):
    optimizer = chainer.optimizers.Adam(alpha=0.0002, beta1=0.5)
    optimizer.setup(model)
    optimizer.add_hook(chainer.optimizer_hooks.WeightDecay(0.0001), 'hook_dec')
    return optimizer


@workload('dcgan', 1, section='programs')
def make(seed):
    rng = numpy.random.RandomState(seed)
    numpy.random.seed(seed)
    images = rng.rand(4 * BATCH, 3, 32, 32).astype(numpy.float32)
    gen, dis = Generator(), Discriminator()
    opt_gen, opt_dis = make_optimizer(gen), make_optimizer(dis)
    state = {'i': 0, 'loss_gen': None, 'loss_dis': None}

    def step():
        start = state['i'] % 4 * BATCH
        state['i'] += 1
        x_real = images[start:start + BATCH]
        y_real = dis(x_real)
        x_fake = gen(gen.make_hidden(BATCH))
        y_fake = dis(x_fake)
        loss_dis = (F.sum(F.softplus(-y_real)) / BATCH
                    + F.sum(F.softplus(y_fake)) / BATCH)
        loss_gen = F.sum(F.softplus(-y_fake)) / BATCH
        dis.cleargrads()
        loss_dis.backward()
        opt_dis.update()
        gen.cleargrads()
        loss_gen.backward()
        opt_gen.update()
        state['loss_gen'], state['loss_dis'] = loss_gen.array, loss_dis.array

    return step, lambda: dict(
        {'gen/' + k: v for k, v in params(gen).items()},
        **{'dis/' + k: v for k, v in params(dis).items()},
        loss_gen=state['loss_gen'], loss_dis=state['loss_dis'])
