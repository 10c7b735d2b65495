"""binlog_codec: read MySQL and MariaDB binary log files offline, exactly.

The package is pure Python. ``reader`` frames a file into events, ``events``
turns each event body into a typed record, ``cli`` is the ``binlog-codec``
command line.
"""

__version__ = "0.1.0"
