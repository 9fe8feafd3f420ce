"""Algorithms that each serve one metric, apart from the parts several metrics share.

Each is a module (or package) exported under its own name, ``judge_metrics.<name>``:

- ``bleu``: nltk's sentence and corpus BLEU, every float equal to nltk's, over Valor's tokens
  (the bleu metric; not sacreBLEU's);
- ``lcs``: the longest common subsequence, ROUGE-L's and ROUGE-Lsum's core (rouge);
- ``qa_match``: the SQuAD script's answer normalisation, exact match and token F1 (accuracy);
- ``tool_calls``: tool calls against expected calls, equal to BFCL's AST checker, and the
  trajectory modes (tool_call_correctness, trajectory_match).
"""
