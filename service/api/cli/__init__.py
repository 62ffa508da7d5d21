"""The ``docqa`` command line."""
