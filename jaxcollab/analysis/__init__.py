"""Trace analysis of finished runs (``eval/analyze.py``): replays of recorded episodes
(:mod:`.replay`), failure-mode coding by a judge model (:mod:`.judge`, with SANZARU's rubric in
:mod:`.sanzaru`) and Keep-Talking behaviour (:mod:`.behaviour`, GPTNT §8 and Table 7)."""
