"""``docqa adapt``: a store's own reranker, trained offline on pseudo-queries made from the store's documents.

``pseudo_queries`` makes (query, passage) pairs from the chunks in scope, ``dataset`` mines hard negatives
for them with the store's own dense and BM25 searches, ``training`` fine-tunes a cross-encoder initialised
from the packaged MiniLM, ``export`` writes it to ONNX (int8 where that keeps the ranking), ``evaluation``
measures it against the store's current ranking on held-out pseudo-queries (and on a ``docqa eval`` question
file when given), and ``job`` runs the whole, resumable after a kill, one job per store at a time, and
installs the model only when it wins. Everything it reads passes ``service.query.guarded.TrainingReads``.
"""
