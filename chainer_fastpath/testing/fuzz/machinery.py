"""The grammar's entries for the training machinery: datasets indexed,
iterators stepped, batches converted, values reported and summarized, a
Classifier called, StandardUpdater steps and LogReport's log, the way a
training loop uses them and at the edges users hit.

Each entry reads its choices from the operation's slot through the
grammar's Builder (the plainest option first) and names what a user would
look at: batches, the iterator's position, observations, means, the log.
The grammar draws them as one operation (:func:`machinery`), and through
its REPLACED entries with the compiled methods replaced.
"""

DTYPES = ('float32', 'float64', 'float16', 'int32', 'int64', 'uint8',
          'bool')
ROWS = (4, 3, 1, 5, 0)
ROW_SHAPES = ((), (2,), (3, 2), (1,))
# Indices of a dataset of ``n`` rows: in range, negative, slices (with
# steps, reversed, empty), lists, NumPy integers and arrays, out of range.
INDICES = ('0', '-1', '1:3', '::2', '::-1', '3:1', '[0, 2]',
           'numpy.array([1, 0])', '{n}', '-{n}-1', 'numpy.int64(1)', '[]',
           'slice(None)', '[-1, 0, -1]', 'numpy.array([], numpy.intp)',
           "'a'", '1.0')
STATE = ('({0}.epoch, {0}.epoch_detail, {0}.is_new_epoch, '
         '{0}.previous_epoch_detail, {0}.current_position)')

_DATASETS = 'chainer.datasets.'


def _columns(b, n, count, keys=None):
    # ``count`` arrays of ``n`` rows; the first drawn in every layout, the
    # others C-ordered; one of them a row longer when drawn (stock's
    # ValueError at construction).
    columns = []
    for i in range(count):
        dtype, row = b.choice(DTYPES), b.choice(ROW_SHAPES)
        shape = (n,) + row
        columns.append(b.array(shape, dtype) if not i else
                       'arr({!r}, {!r})'.format(shape, dtype))
    if count > 1 and b.integer(0, 5) == 5:
        columns[-1] = 'arr(({},), {!r})'.format(n + 1, 'float32')
    if keys:
        return ', '.join('{}={}'.format(k, c) for k, c in zip(keys, columns))
    return ', '.join(columns)


def _dataset(b, forms=('tuple', 'dict', 'my', 'plain')):
    """Emits a dataset of a drawn form; returns (its name, its rows)."""
    form = b.choice(forms)
    n = b.choice(ROWS)
    count = b.integer(1, 3)
    if form == 'dict':
        expr = _DATASETS + 'DictDataset({})'.format(
            _columns(b, n, count, 'xyz'))
    elif form == 'list':
        expr = 'list(range({}))'.format(n)
    elif form == 'rows':
        expr = '[({}, {}) for _ in range({})]'.format(
            b.array((2,), b.choice(DTYPES)), 'numpy.int32(1)', n)
    else:
        cls = {'tuple': _DATASETS + 'TupleDataset',
               'my': 'MyTupleDataset', 'plain': 'PlainTupleDataset'}[form]
        expr = '{}({})'.format(cls, _columns(b, n, count))
    return b.add(expr, None, 'object', 'nd').name, n


def _index(b, ds, n):
    index = b.choice(INDICES).format(n=n)
    b.add('{}[{}]'.format(ds, index), None, 'object', 'nd')


def datasets(b):
    """TupleDataset, DictDataset and subclasses indexed every way."""
    ds, n = _dataset(b)
    b.add('len({})'.format(ds), None, 'object', 'nd')
    for _ in range(b.integer(1, 3)):
        _index(b, ds, n)


SHUFFLES = ('shuffle=False', '', 'shuffle=True',
            'order_sampler=chainer.iterators.ShuffleOrderSampler('
            'numpy.random.RandomState(3))',
            'order_sampler=Reversed()',
            'shuffle=True, order_sampler=Reversed()')


def _iterator_args(b, n):
    batch = b.choice((2, 3, 1, n + 1 if n else 4))
    args = [str(batch)]
    if b.flag():
        args.append('repeat=False')
    shuffle = b.choice(SHUFFLES)
    if shuffle:
        args.append(shuffle)
    return ', '.join(args)


def iterators(b):
    """SerialIterator over datasets and lists: next() with its position
    read after each, reset(), a serializers round trip."""
    ds, n = _dataset(b, ('tuple', 'list', 'dict', 'rows', 'my', 'plain'))
    args = _iterator_args(b, n)
    cls = b.choice(('chainer.iterators.SerialIterator', 'MySerialIterator'))
    it = b.add('{}({}, {})'.format(cls, ds, args), None, 'object',
               'nd').name
    for _ in range(b.integer(1, 6)):
        b.add(b.choice(('next({})', '{}.next()', '{}.__next__()')).format(
            it), None, 'object', 'nd')
        b.add(STATE.format(it), None, 'object', 'nd')
    after = b.choice((None, 'reset', 'reload'))
    if after == 'reset':
        b.emit('{}.reset()'.format(it))
    elif after == 'reload':
        it = b.add('reloaded({}, {}({}, {}))'.format(it, cls, ds, args),
                   None, 'object', 'nd').name
    if after:
        b.add('next({})'.format(it), None, 'object', 'nd')
        b.add(STATE.format(it), None, 'object', 'nd')


_CONCATS = ('chainer.dataset.concat_examples',
            'chainer.dataset.convert.concat_examples',
            'chainer.dataset.converter()(chainer.dataset.convert.'
            'concat_examples_func)',
            # A user's converter, which stock's __call__ runs.
            'chainer.dataset.converter()(lambda batch, device=None, '
            'padding=None: chainer.dataset.concat_examples(batch, device, '
            'padding))')
PADDINGS = ('None', '0', '-1.5', '(0, 1)', 'numpy.float32(2)', '(1,)',
            'True')
DEVICES = ('None', '-1', "'@numpy'", "chainer.get_device('@numpy')",
           'numpy', '0')


def concats(b):
    """concat_examples over tuples, dicts and arrays, ragged or not, with
    and without padding, on the CPU devices and others."""
    form = b.choice(('tuple', 'dict', 'array', 'scalar', 'mixed'))
    size = b.choice((2, 1, 3, 0))
    ragged = b.flag()
    dtypes = (b.choice(DTYPES), b.choice(DTYPES))
    shape = '(i % 2 + 1, 2)' if ragged else '(2,)'
    first = b.array((2,), dtypes[0]).replace('(2,)', shape, 1)
    second = 'arr({}, {!r})'.format('(i % 3,)' if ragged else '()',
                                    dtypes[1])
    example = {'tuple': '({}, {})'.format(first, second),
               'dict': "{{'x': {}, 't': {}}}".format(first, second),
               'array': first, 'scalar': 'numpy.float32(i)',
               # A column whose rows differ in dtype.
               'mixed': '(arr((2,), ({!r}, {!r})[i % 2]), i)'.format(
                   *dtypes)}[form]
    batch = b.add('[{} for i in range({})]'.format(example, size), None,
                  'object', 'nd').name
    args = [batch]
    device = b.choice(DEVICES)
    if device != 'None':
        args.append(device)
    padding = b.choice(PADDINGS)
    if padding != 'None':
        args.append('padding=' + padding)
    b.add('{}({})'.format(b.choice(_CONCATS), ', '.join(args)), None,
          'object', 'nd')


VALUES = ('Variable(arr((), {d!r}))', 'arr((), {d!r})',
          'arr((), {d!r})[()]', 'float(arr((), {d!r}))', '3', 'numpy.nan',
          'float("inf")', 'Variable(arr((2,), {d!r}))', 'numpy.int32(2)',
          'True')
WEIGHTS = ('1', '2', '0.5', 'numpy.float32(3)', '0', 'numpy.array(1.5)')


def reports(b):
    """Reporter with observers, report() in and out of its scope,
    Summary and DictSummary with weights and their means and statistics.
    """
    dtype = b.choice(('float32', 'float64', 'float16'))
    values = [b.choice(VALUES).format(d=dtype) for _ in range(2)]
    where = b.choice(('scope', 'outside', 'method', 'unknown'))
    obs = b.name('observation')
    b.emit('{} = {{}}'.format(obs))
    rep, link = b.name('_reporter'), b.name('_link')
    b.emit('{} = chainer.Reporter()'.format(rep))
    b.emit('{} = L.Linear(1, 1)'.format(link))
    b.emit("{}.add_observer('main', {})".format(rep, link))
    observer = b.choice(('', ', ' + link))
    if where == 'unknown':
        observer = ', L.Linear(1, 1)'
    report = "{{'a': {}, 'b': {}}}{}".format(values[0], values[1], observer)
    if where == 'outside':
        b.emit('chainer.report({})'.format(report))
    elif where == 'method':
        b.emit('with {}.scope({}):\n    {}.report({})'.format(
            rep, obs, rep, report))
    else:
        b.emit('with {}.scope({}):\n    chainer.report({})'.format(
            rep, obs, report))
    cls = b.choice(('Summary', 'DictSummary'))
    summary = b.name('_summary')
    b.emit('{} = chainer.reporter.{}()'.format(summary, cls))
    for value in values[:b.integer(1, 2)]:
        if cls == 'DictSummary':
            b.emit("{}.add({{'a': {}, 'b': ({}, {})}})".format(
                summary, value, value, b.choice(WEIGHTS)))
        else:
            b.emit('{}.add({}, weight={})'.format(summary, value,
                                                  b.choice(WEIGHTS)))
    b.add('{}.compute_mean()'.format(summary), None, 'object', 'nd')
    b.add('{}.make_statistics()'.format(summary), None, 'object', 'nd')


LOSSES = ('', 'lossfun=F.softmax_cross_entropy',
          'lossfun=lambda y, t: F.sum(y)', 'accfun=F.accuracy',
          'accfun=lambda y, t: F.sum(y)')


LABEL_KEYS = ('', "label_key='t'", 'label_key=0', 'label_key=2',
              'label_key=1.0')


def _classifier(b, dtype, keys=LABEL_KEYS):
    # A Classifier over a Linear of 3 inputs and 4 classes.
    args = ['linear(3, 4, {!r})'.format(dtype)]
    loss = b.choice(LOSSES)
    if loss:
        args.append(loss)
    key = b.choice(keys)
    if key:
        args.append(key)
    clf = b.add('L.Classifier({})'.format(', '.join(args)), None, 'object',
                'nd').name
    if b.flag():
        b.emit('{}.compute_accuracy = False'.format(clf))
    return clf, key


def classifiers(b):
    """Classifier.forward: labels by position or keyword, losses and
    accuracies replaced, reported under a Reporter."""
    dtype = b.choice(('float32', 'float64', 'float16'))
    clf, key = _classifier(b, dtype)
    n = b.choice((2, 1, 0))
    x = 'arr(({}, 3), {!r})'.format(n, dtype)
    t = 'ints(({},), 4)'.format(n)
    # label_key 2 is out of bounds (stock's ValueError), 1.0 not an int
    # nor a str (its TypeError, at construction).
    call = {"label_key='t'": '{c}({x}, t={t})',
            'label_key=0': '{c}({t}, {x})'}.get(key, '{c}({x}, {t})')
    call = call.format(c=clf, x=x, t=t)
    obs = b.name('observation')
    b.emit('{} = {{}}'.format(obs))
    rep = b.name('_reporter')
    b.emit('{} = chainer.Reporter()'.format(rep))
    b.emit("{}.add_observer('main', {})".format(rep, clf))
    loss = b.name()
    b.emit('with {}.scope({}):\n    {} = {}'.format(rep, obs, loss, call))
    b.add('({0}.y, {0}.loss, {0}.accuracy)'.format(clf), None, 'object',
          'nd')


CONVERTERS = ('', 'converter=chainer.dataset.concat_examples',
              'converter=_converter',
              'converter=lambda batch, device: '
              'chainer.dataset.concat_examples(batch, device)')


def updaters(b):
    """StandardUpdater steps over a Classifier with SGD or Adam, the
    converter and loss function given or not, observed as a trainer does,
    logged by LogReport through its calls or a Trainer's run."""
    dtype = b.choice(('float32', 'float64'))
    # Its label last: where the updater puts it.
    clf, _ = _classifier(b, dtype, ('',))
    n = b.choice((4, 5, 2))
    ds = b.add('chainer.datasets.TupleDataset(arr(({}, 3), {!r}), '
               'ints(({},), 4))'.format(n, dtype, n), None, 'object',
               'nd').name
    it = b.add('chainer.iterators.SerialIterator({}, {}, shuffle={})'.format(
        ds, b.choice((2, 3)), b.flag()), None, 'object', 'nd').name
    opt = b.add('optimizers.{}()'.format(b.choice(('SGD', 'Adam'))), None,
                'object', 'nd').name
    b.emit('{}.setup({})'.format(opt, clf))
    args = [it, opt]
    converter = b.choice(CONVERTERS)
    if converter == 'converter=_converter':
        b.emit('_converter = mock.MagicMock(wraps=chainer.dataset.'
               'concat_examples)')
    if converter:
        args.append(converter)
    if b.flag():
        args.append('loss_func={}'.format(clf))
    upd = b.add('chainer.training.updaters.StandardUpdater({})'.format(
        ', '.join(args)), None, 'object', 'nd').name
    steps = b.integer(1, 4)
    log = b.add('chainer.training.extensions.LogReport(trigger=({}, '
                "'iteration'), log_name=None)".format(b.choice((1, 2))),
                None, 'object', 'nd').name
    if b.flag():
        b.emit('train({}, {}, {})'.format(upd, steps, log))
    else:
        obs = b.name('observation')
        rep = b.name('_reporter')
        b.emit('{} = chainer.Reporter()'.format(rep))
        b.emit("{}.add_observer('main', {})".format(rep, clf))
        for _ in range(steps):
            b.emit('{} = {{}}'.format(obs))
            b.emit('with {}.scope({}):\n    {}.{}()'.format(
                rep, obs, upd, b.choice(('update', 'update_core'))))
            b.emit('{}(Stand({}, {}))'.format(log, upd, obs))
    b.add('log_of({})'.format(log), None, 'object', 'nd')
    b.add('({0}.iteration, {0}.epoch, {0}.epoch_detail, {0}.is_new_epoch, '
          '{1})'.format(upd, clf), None, 'object', 'nd')
    if converter == 'converter=_converter':
        b.add('_converter.call_count', None, 'object', 'nd')


ENTRIES = (datasets, iterators, concats, reports, classifiers, updaters)


def machinery(b):
    """One of :data:`ENTRIES`."""
    b.choice(ENTRIES)(b)


# What a program replaces among the compiled machinery, and the entry that
# then reaches it (grammar.REPLACED's form). Each is compiled when
# patched: autospec would make a MagicMock, not a method, of it.
_ITERATORS = 'chainer.iterators.'
REPLACED = (
    (_ITERATORS + 'SerialIterator', '__next__', 'iterators'),
    # What StandardUpdater calls.
    (_ITERATORS + 'SerialIterator', 'next', 'updaters'),
    (_ITERATORS + 'ShuffleOrderSampler', '__call__', 'iterators'),
    (_DATASETS + 'TupleDataset', '__getitem__', 'datasets'),
    (_DATASETS + 'TupleDataset', '__len__', 'iterators'),
    (_DATASETS + 'DictDataset', '__getitem__', 'datasets'),
    ('chainer.dataset.convert._ArbitraryCallableConverter', '__call__',
     'concats'),
    ('L.Classifier', 'forward', 'classifiers'),
    ('chainer.training.updaters.StandardUpdater', 'update_core',
     'updaters'),
    ('chainer.training.updaters.StandardUpdater', 'update', 'updaters'),
    ('chainer.training.extensions.LogReport', '__call__', 'updaters'),
)
COMPILED = frozenset((owner, method) for owner, method, _ in REPLACED)
# What the compiled methods check before they run, replaced: each then
# hands the call to stock's code.
REPLACED += (
    (_ITERATORS + 'SerialIterator', '__setattr__', 'iterators'),
    (_ITERATORS + '_statemachine', 'iterator_statemachine', 'iterators'),
    ('chainer.dataset.convert', '_concat_arrays', 'concats'),
    ('chainer.backends._cpu.CpuDevice', 'send', 'concats'),
    ('chainer.reporter', '_copy_variable', 'reports'),
    ('L.Classifier', '__setattr__', 'classifiers'),
    ('chainer.training.extensions.LogReport', '_init_summary', 'updaters'),
)
USES = {entry.__name__: entry for entry in ENTRIES}
