"""``python -m service.api.cli``: the ``docqa`` command line."""

from service.api.cli.main import entry

entry()
