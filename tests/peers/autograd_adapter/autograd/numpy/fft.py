"""``autograd.numpy.fft``: numpy's (tenferro claims no fft: these tests fail as such)."""

from numpy.fft import *  # noqa: F403
