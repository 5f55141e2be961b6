"""Where SGD, Adam and AdamW lived before tracejit.optim was split by optimizer; kept so that
``from tracejit.optim.optimizers import Adam`` still works."""
from .adam import Adam, AdamW
from .sgd import SGD

__all__ = ["SGD", "Adam", "AdamW"]
