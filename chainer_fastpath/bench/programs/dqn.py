"""DQN on cart-pole as in Chainer's ``dqn_cartpole.py``: a 4-100-100-2 ReLU
Q-function, double DQN targets ``reward + gamma * (1 - done) * next_q``,
mean Huber loss, Adam (eps 1e-2), replay minibatch 64, target network
synchronized every 100 steps, epsilon-greedy. The cart-pole dynamics are
the classic ones, written here. One step is one environment step and one
update."""
import copy
import math

import numpy

import chainer
import chainer.functions as F
import chainer.links as L

from chainer_fastpath.bench.workloads import params, workload

UNITS, BATCH, GAMMA, TARGET_EVERY, REPLAY_START = 100, 64, 0.99, 100, 500


class CartPole:
    """Cart-pole balancing: observation (x, x', theta, theta'), actions
    push left / right, reward 1 per step, done when it falls or leaves."""

    def __init__(self, rng):
        self.rng = rng
        self.reset()

    def reset(self):
        self.state = self.rng.uniform(-0.05, 0.05, 4)
        self.t = 0
        return self.state.astype(numpy.float32)

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = 10.0 if action == 1 else -10.0
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (force + 0.05 * theta_dot ** 2 * sin) / 1.1
        theta_acc = (9.8 * sin - cos * temp) / (
            0.5 * (4.0 / 3.0 - 0.1 * cos ** 2 / 1.1))
        x_acc = temp - 0.05 * theta_acc * cos / 1.1
        self.state = numpy.array([x + 0.02 * x_dot, x_dot + 0.02 * x_acc,
                                  theta + 0.02 * theta_dot,
                                  theta_dot + 0.02 * theta_acc])
        self.t += 1
        done = bool(abs(self.state[0]) > 2.4 or abs(self.state[2]) > 0.2095
                    or self.t >= 200)
        return self.state.astype(numpy.float32), 1.0, done


class QFunction(chainer.Chain):
    def __init__(self, obs_size, n_actions, n_units=UNITS):
        super().__init__()
        with self.init_scope():
            self.l0 = L.Linear(obs_size, n_units)
            self.l1 = L.Linear(n_units, n_units)
            self.l2 = L.Linear(n_units, n_actions)

    def forward(self, x):
        h = F.relu(self.l0(x))
        h = F.relu(self.l1(h))
        return self.l2(h)


def update(Q, target_Q, opt, samples):
    obs = numpy.asarray([s[0] for s in samples], dtype=numpy.float32)
    action = numpy.asarray([s[1] for s in samples], dtype=numpy.int32)
    reward = numpy.asarray([s[2] for s in samples], dtype=numpy.float32)
    done = numpy.asarray([s[3] for s in samples], dtype=numpy.float32)
    obs_next = numpy.asarray([s[4] for s in samples], dtype=numpy.float32)
    y = F.select_item(Q(obs), action)
    with chainer.no_backprop_mode():
        next_q = F.select_item(target_Q(obs_next),
                               F.argmax(Q(obs_next), axis=1))
    target = reward + GAMMA * (1 - done) * next_q
    loss = F.mean(F.huber_loss(y, target, delta=1.0, reduce='no'))
    Q.cleargrads()
    loss.backward()
    opt.update()
    return loss.array


@workload('dqn', 50, section='programs')
def make(seed):
    rng = numpy.random.RandomState(seed)
    numpy.random.seed(seed)
    env = CartPole(rng)
    Q = QFunction(4, 2)
    target_Q = copy.deepcopy(Q)
    opt = chainer.optimizers.Adam(eps=1e-2)
    opt.setup(Q)
    buffer = []
    state = {'obs': env.reset(), 'steps': 0, 'loss': None}

    def act(epsilon):
        if rng.rand() < epsilon:
            action = rng.randint(2)
        else:
            with chainer.no_backprop_mode():
                q = Q(state['obs'][None])
            action = int(q.array.argmax())
        obs_next, reward, done = env.step(action)
        buffer.append((state['obs'], action, reward, done, obs_next))
        del buffer[:-10 ** 4]
        state['obs'] = env.reset() if done else obs_next

    for _ in range(REPLAY_START):
        act(1.0)

    def step():
        act(max(0.1, 1.0 - state['steps'] / 1000))
        samples = [buffer[i] for i in rng.randint(len(buffer), size=BATCH)]
        state['loss'] = update(Q, target_Q, opt, samples)
        state['steps'] += 1
        if state['steps'] % TARGET_EVERY == 0:
            target_Q.copyparams(Q)

    return step, lambda: dict(params(Q), loss=state['loss'])
