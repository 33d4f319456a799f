"""``python -m app.pipeline archive|report ...``, and the file to give ``spark-submit``.

spark-submit runs a Python *file*, not a console script; this one is the ``xstreams`` command
line, so ``spark-submit --master spark://host:7077 <this file> archive ...`` runs the same job
on a cluster, with spark-submit's master and settings.
"""

from app.cli import main

main()
