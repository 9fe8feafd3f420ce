"""The judge steps of the LLM-guided metrics, one object each (:class:`.base.JudgeStep`: its
prompt, answer schema, grounding check and token limit), by family: :mod:`.extraction`
(statements, opinions), :mod:`.verdicts` (one verdict per item; answer correctness's TP/FP/FN),
:mod:`.rating` (summary coherence), :mod:`.criteria` (G-Eval's reason for its score; its
rating and pairwise's preference are label readings, not structured answers),
:mod:`.conversation` (task completion, conversation completeness, knowledge retention); and
:mod:`.chains`, which turns their results into per-sample results (extracted items ->
verdicts -> share of "yes").

Metric scripts use this package as ``steps`` (``from shared import steps``).
"""

from .base import JudgeStep, ask, is_dry_run
from .chains import (
    ItemVerdicts,
    dropped_details,
    first_failure_of,
    opinion_verdicts,
    statement_verdicts,
    verdict_share,
    yes_share,
)
from .conversation import (
    CONVERSATION_COMPLETENESS,
    INTENTIONS,
    KNOWLEDGE_RETENTION,
    TASK_LABELS,
    USER_FACTS,
    Retention,
    has_assistant_turn,
    intention_verdicts,
    retention_jobs,
    retention_verdicts,
    said,
    task_verdicts,
)
from .criteria import G_EVAL_REASON, ReasonStep
from .extraction import (
    OPINIONS,
    STATEMENTS,
    STATEMENTS_WITH_QUESTION,
    ExtractionStep,
    extract_opinions,
    extract_statements,
    items_or_estimate,
)
from .rating import SUMMARY_COHERENCE, RatingStep, rate_summaries
from .verdicts import (
    ANSWER_RELEVANCE,
    BIAS,
    CONTEXT_PRECISION,
    CONTEXT_RECALL,
    CONTEXT_RELEVANCE,
    CORRECTNESS,
    CORRECTNESS_WITH_QUESTION,
    FAITHFULNESS,
    HALLUCINATION,
    TOXICITY,
    CorrectnessJob,
    CorrectnessStep,
    JudgedItem,
    VerdictJob,
    VerdictStep,
    as_json_list,
    correctness_verdicts,
    verdict_dicts,
    verdict_jobs,
)

__all__ = [
    "CONVERSATION_COMPLETENESS", "INTENTIONS", "KNOWLEDGE_RETENTION", "TASK_LABELS",
    "USER_FACTS", "Retention", "has_assistant_turn", "intention_verdicts", "retention_verdicts",
    "retention_jobs", "said", "task_verdicts",
    "G_EVAL_REASON",
    "ReasonStep",
    "ANSWER_RELEVANCE", "BIAS", "CONTEXT_PRECISION", "CONTEXT_RECALL", "CONTEXT_RELEVANCE",
    "CORRECTNESS", "CORRECTNESS_WITH_QUESTION", "FAITHFULNESS", "HALLUCINATION", "OPINIONS",
    "STATEMENTS", "STATEMENTS_WITH_QUESTION", "SUMMARY_COHERENCE", "TOXICITY", "CorrectnessJob",
    "CorrectnessStep", "ExtractionStep", "ItemVerdicts", "JudgeStep", "RatingStep", "JudgedItem",
    "VerdictJob", "VerdictStep", "as_json_list", "ask", "correctness_verdicts",
    "dropped_details", "extract_opinions", "extract_statements", "first_failure_of",
    "is_dry_run", "items_or_estimate", "opinion_verdicts", "rate_summaries",
    "statement_verdicts", "verdict_dicts", "verdict_jobs", "verdict_share", "yes_share",
]
