"""Coverage-guided fuzzing of binlake's decoders (not part of the product).

* :mod:`fuzz.targets`: one function per decoder; each takes bytes and lets
  only the decoder's documented error through;
* :mod:`fuzz.seeds`: the starting inputs, made from real binlogs, the codec's
  synthetic corpus and backup images written by the codec;
* :mod:`fuzz.run`: the long run with atheris (``python -m fuzz.run --all``);
* ``fuzz/corpus/<target>/``: the committed corpus, replayed by the tests.
"""
