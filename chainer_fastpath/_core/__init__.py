"""Infrastructure the entry points and the compiled functions share: no
Chainer entry point and no particular function lives here, and nothing here
imports from the rest of the package."""
