"""rankwise's version (``rankwise.__version__``), in a module of its own so that the modules that write
it (scripts, written runs, reports, the CLI) need not import the package's ``__init__``."""

__version__ = "0.1.0"
