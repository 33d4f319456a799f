"""The data pipeline on Apache Spark: the ``xstreams`` data source, the archive and report jobs.

Everything here talks to a running service over HTTP (the Redis-command endpoint), never to the
engine's objects: a Spark executor on another machine has only a URL. PySpark is an optional
dependency (``pip install 'xstreams[pipeline]'``); nothing outside this package imports it.
"""
