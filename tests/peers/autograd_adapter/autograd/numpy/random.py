"""``autograd.numpy.random``: numpy's."""

from numpy.random import *  # noqa: F403
from numpy.random import seed  # noqa: F401
