"""Variational autoencoder as in Chainer's ``train_vae.py``: a 784-500-20
Gaussian encoder and 20-500-784 Bernoulli decoder written with
``chainer.distributions``, the ELBO with one sample, Adam, minibatch 100 of
binarized 28x28 images. One step is one minibatch."""
import numpy

import chainer
import chainer.distributions as D
import chainer.functions as F
import chainer.links as L

from chainer_fastpath.bench.workloads import params, workload

N_IN, N_H, N_LATENT, BATCH = 784, 500, 20, 100


class Encoder(chainer.Chain):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.linear = L.Linear(N_IN, N_H)
            self.mu = L.Linear(N_H, N_LATENT)
            self.ln_sigma = L.Linear(N_H, N_LATENT)

    def forward(self, x):
        h = F.tanh(self.linear(x))
        return D.Normal(loc=self.mu(h), log_scale=self.ln_sigma(h))


class Decoder(chainer.Chain):
    def __init__(self):
        super().__init__()
        with self.init_scope():
            self.linear = L.Linear(N_LATENT, N_H)
            self.output = L.Linear(N_H, N_IN)

    def forward(self, z):
        h = F.tanh(self.linear(z, n_batch_axes=2))
        return D.Bernoulli(logit=self.output(h, n_batch_axes=2))


class Prior(chainer.Link):
    def __init__(self):
        super().__init__()
        self.loc = numpy.zeros(N_LATENT, numpy.float32)
        self.scale = numpy.ones(N_LATENT, numpy.float32)
        self.register_persistent('loc')
        self.register_persistent('scale')

    def forward(self):
        return D.Normal(self.loc, scale=self.scale)


class AvgELBOLoss(chainer.Chain):
    def __init__(self, encoder, decoder, prior):
        super().__init__()
        with self.init_scope():
            self.encoder = encoder
            self.decoder = decoder
            self.prior = prior

    def forward(self, x):
        q_z = self.encoder(x)
        z = q_z.sample(1)
        p_x = self.decoder(z)
        reconstr = F.mean(F.sum(p_x.log_prob(
            F.broadcast_to(x[None, :], (1,) + x.shape)), axis=-1))
        kl_penalty = F.mean(F.sum(
            chainer.kl_divergence(q_z, self.prior()), axis=-1))
        return -(reconstr - kl_penalty)


@workload('vae', 4, section='programs')
def make(seed):
    rng = numpy.random.RandomState(seed)
    numpy.random.seed(seed)
    images = (rng.rand(10 * BATCH, N_IN) < 0.2).astype(numpy.float32)
    model = AvgELBOLoss(Encoder(), Decoder(), Prior())
    optimizer = chainer.optimizers.Adam()
    optimizer.setup(model)
    state = {'i': 0, 'loss': None}

    def step():
        start = state['i'] % 10 * BATCH
        state['i'] += 1
        loss = model(images[start:start + BATCH])
        model.cleargrads()
        loss.backward()
        optimizer.update()
        state['loss'] = loss.array

    return step, lambda: dict(params(model), loss=state['loss'])
