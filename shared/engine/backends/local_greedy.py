"""The local judge's default decoder: greedy, schema-constrained answers of a batch, token for
token what :func:`.local_decoding.generate_answers` (the reference) answers, faster.

- Each prompt runs on its own from the longest prefix the model's store holds
  (:func:`.local_decoding.prefill`): no row pads another, and a repair starts after its first
  conversation.
- The rows are decoded together in one preallocated cache, left-padded (``[pad][prompt]``), the
  pads masked.
- Prompt lookup: a row whose last tokens occurred earlier in its prompt or answer (a judge's
  answer copies its input: statements, quotes) proposes the tokens that followed there, and one
  forward pass checks them all. Greedy decoding keeps a proposed token only where the masked
  argmax picks it, so the answer is the same; a step reads every weight whatever it feeds, so a
  kept proposal is a step saved. Rejected positions stay in the cache, masked.
- A finished row's prompt and answer go to the store; finished rows leave the batch once a
  quarter of it has finished (each removal copies the cache).
- A list of distinct items (``uniqueItems``) ends at its first repeat, closed to valid JSON
  (:class:`.local_decoding.RepeatStop`), as the reference ends it; such a row is not stored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .local_decoding import RepeatStop, forward, grow, prefill
from .local_kv import buffer_cache

if TYPE_CHECKING:
    from .local_model import LoadedModel

# Answer positions the batch cache has room for at first; a longer answer doubles it. Judge
# answers are short (24 tokens on average on `make run`), and a row's room is paid by every row.
ANSWER_ROOM = 64
# Prompt lookup: at most DRAFT_TOKENS proposed per row and step, matched on the last
# LOOKUP_NGRAM tokens (then fewer), and at most STEP_TOKENS fed per step in all: reading the
# weights bounds a step of few tokens (8 rows cost less than twice one row on a CPU: 92 ms and
# 52 ms at 400 tokens), and the matrix products grow beyond, so proposals are for small batches.
DRAFT_TOKENS = 4
LOOKUP_NGRAM = 3
STEP_TOKENS = 16


def draft(sequence: list[int], size: int, stop: set[int]) -> list[int]:
    """Up to ``size`` tokens that followed the latest earlier occurrence of the sequence's last
    3 (else 2, else 1) tokens, cut before an end token."""
    if size < 1 or len(sequence) < 2:
        return []
    ids = np.asarray(sequence, dtype=np.int64)
    for n in range(min(LOOKUP_NGRAM, len(ids) - 1), 0, -1):
        windows = np.lib.stride_tricks.sliding_window_view(ids[:-1], n)
        hits = np.flatnonzero((windows == ids[-n:]).all(axis=1))
        if hits.size:
            proposal = ids[hits[-1] + n:hits[-1] + n + size].tolist()
            for cut, token in enumerate(proposal):
                if token in stop:
                    return proposal[:cut]
            return proposal
    return []


def greedy_answers(lm: LoadedModel, prompts: list[list[int]], compiled: Any,
                   max_tokens: int, stop: RepeatStop | None = None) -> list[list[int]]:
    """The answer tokens of each prompt, end token excluded (module docstring)."""
    batch = GreedyBatch(lm, prompts, compiled, max_tokens, stop)
    while batch.going:
        batch.step()
    return batch.answers


class GreedyBatch:
    """The decoding state of a batch: the cache, its mask (a column per cache position), each
    row's answer, grammar matcher and the token chosen but not yet fed (``pending``)."""

    def __init__(self, lm: LoadedModel, prompts: list[list[int]], compiled: Any,
                 max_tokens: int, stop: RepeatStop | None = None) -> None:
        import torch

        self.lm, self.prompts, self.max_tokens, self.stop = lm, prompts, max_tokens, stop
        self.eos = set(lm.eos_ids)
        firsts, row_keys, row_values = zip(*(prefill(lm, ids) for ids in prompts), strict=True)
        count, width = len(prompts), max(len(ids) for ids in prompts)
        layers = len(row_keys[0])
        keys, values = grow(lm, [None] * layers, [None] * layers, count,
                            width + min(max_tokens, ANSWER_ROOM))
        self.mask = torch.zeros((count, width), dtype=torch.long, device=lm.device)
        for row, ids in enumerate(prompts):
            self.mask[row, width - len(ids):] = 1
            for layer in range(layers):
                keys[layer][row, :, width - len(ids):width] = row_keys[row][layer]
                values[layer][row, :, width - len(ids):width] = row_values[row][layer]
        self.cache = buffer_cache(keys, values, length=width)
        self.next_position = [len(ids) for ids in prompts]
        self.matchers = None
        if compiled is not None:
            import xgrammar

            self.matchers = [xgrammar.GrammarMatcher(compiled, max_rollback_tokens=DRAFT_TOKENS)
                             for _ in prompts]
        self.answers: list[list[int]] = [[] for _ in prompts]  # by prompt
        self.pending: list[int | None] = [None] * count  # by cache row, as what follows
        self.rows = list(range(count))  # the prompt of each row of the cache
        self.going: list[int] = []  # the cache rows still decoding
        self.ended: list[int] = []  # the cache rows that chose an end token, to store
        chosen = self.choose(torch.stack(firsts).float(), [(r, 0) for r in range(count)])
        for row, token in enumerate(chosen):
            self.take(row, token)
        self.store_ended()

    # -- one step

    def step(self) -> None:
        """Feed each going row its pending token and its proposal; keep what greedy picks."""
        import torch

        size = max(0, min(DRAFT_TOKENS, STEP_TOKENS // len(self.going) - 1))
        fed = {row: [self.pending[row]] + self.proposal(row, size) for row in self.going}
        width = max(len(tokens) for tokens in fed.values())
        input_ids = torch.full((len(self.rows), width), self.lm.pad_id, dtype=torch.long)
        columns = torch.zeros((len(self.rows), width), dtype=torch.long)
        positions = torch.zeros((len(self.rows), width), dtype=torch.long)
        for row, tokens in fed.items():
            input_ids[row, :len(tokens)] = torch.tensor(tokens)
            columns[row, :len(tokens)] = 1
            positions[row] = torch.arange(self.next_position[row], self.next_position[row] + width)
        start = self.mask.shape[1]
        self.mask = torch.cat([self.mask, columns.to(self.mask.device)], dim=1)
        logits = forward(self.lm, self.cache, input_ids=input_ids.to(self.lm.device),
                         attention_mask=self.mask, position_ids=positions.to(self.lm.device),
                         logits_to_keep=width).logits
        slots = [(row, j) for row, tokens in fed.items() for j in range(len(tokens))]
        picked = self.choose(logits[[r for r, _ in slots], [j for _, j in slots]].float(), slots,
                             fed)
        chosen = dict(zip(slots, picked, strict=True))
        for row, tokens in fed.items():
            kept = self.verify(row, tokens, chosen)
            self.mask[row, start + kept:] = 0
            self.next_position[row] += kept
        self.store_ended()
        self.compact()

    def proposal(self, row: int, size: int) -> list[int]:
        """The row's proposal, cut where the grammar refuses a token or the answer would pass
        ``max_tokens``."""
        prompt = self.rows[row]
        room = self.max_tokens - len(self.answers[prompt])
        tokens = draft(self.prompts[prompt] + self.answers[prompt], min(size, room), self.eos)
        if self.matchers is None:
            return tokens
        matcher, accepted = self.matchers[prompt], 0
        for token in tokens:
            if not matcher.accept_token(token):
                break
            accepted += 1
        if accepted:
            matcher.rollback(accepted)
        return tokens[:accepted]

    def choose(self, scores: Any, slots: list[tuple[int, int]],
               fed: dict[int, list[int]] | None = None) -> list[int]:
        """The masked argmax of each slot ``(row, j)``: the token after the row's pending one
        and its first ``j - 1`` proposed tokens (``fed``), under the grammar's mask there."""
        if self.matchers is not None:
            import xgrammar

            bitmask = xgrammar.allocate_token_bitmask(len(slots), self.lm.vocab_size)
            slot = 0
            for row in dict.fromkeys(r for r, _ in slots):
                matcher, tokens = self.matchers[self.rows[row]], (fed or {}).get(row, [None])
                for j in range(len(tokens)):
                    matcher.fill_next_token_bitmask(bitmask, slot)
                    slot += 1
                    if j + 1 < len(tokens):
                        matcher.accept_token(tokens[j + 1])
                if len(tokens) > 1:
                    matcher.rollback(len(tokens) - 1)
            xgrammar.apply_token_bitmask_inplace(scores, bitmask.to(scores.device))
        return scores.argmax(dim=-1).tolist()

    def verify(self, row: int, tokens: list[int], chosen: dict[tuple[int, int], int]) -> int:
        """Keep the proposed tokens greedy picks, and take greedy's pick after the last kept one
        (the next pending token, or the end); the number of fed tokens kept (the pending one
        and the proposal's kept part)."""
        for j in range(1, len(tokens)):
            pick = chosen[(row, j - 1)]
            if pick != tokens[j]:
                self.take(row, pick)
                return j
            if not self.take(row, pick):
                return j + 1
        self.take(row, chosen[(row, len(tokens) - 1)])
        return len(tokens)

    def take(self, row: int, token: int) -> bool:
        """Add the chosen ``token`` to the row's answer (or end it); whether the row goes on."""
        prompt = self.rows[row]
        if token in self.eos:
            self.finish(row)
            self.ended.append(row)
            return False
        self.answers[prompt].append(token)
        if self.matchers is not None:
            self.matchers[prompt].accept_token(token)
        closed = None if self.stop is None else self.stop.closed(self.answers[prompt])
        if closed is not None:
            self.answers[prompt] = closed
            self.finish(row)
            return False
        if len(self.answers[prompt]) >= self.max_tokens:
            self.finish(row)
            return False
        self.pending[row] = token
        if row not in self.going:
            self.going.append(row)
        return True

    def finish(self, row: int) -> None:
        if row in self.going:
            self.going.remove(row)
        self.pending[row] = None

    def store_ended(self) -> None:
        """Keep the prompt and answer of each row that ended on an end token (every answer
        token has run then) in the store: a repair re-sends them."""
        for row in self.ended:
            ids = self.prompts[self.rows[row]] + self.answers[self.rows[row]]
            kept = self.mask[row].nonzero().flatten()
            if len(kept) == len(ids):
                layers = self.cache.layers
                self.lm.kv_store.put(ids, [layer.keys[row, :, kept] for layer in layers],
                                     [layer.values[row, :, kept] for layer in layers])
        self.ended = []

    def compact(self) -> None:
        """Drop the finished rows from the cache once they are a quarter of it."""
        import torch

        finished = len(self.rows) - len(self.going)
        if not self.going or finished < max(1, len(self.rows) // 4):
            return
        keep = sorted(self.going)
        self.cache.batch_select_indices(torch.tensor(keep, dtype=torch.long,
                                                     device=self.lm.device))
        self.mask = self.mask[keep]
        renumber = {old: new for new, old in enumerate(keep)}
        self.rows = [self.rows[old] for old in keep]
        self.pending = [self.pending[old] for old in keep]
        self.next_position = [self.next_position[old] for old in keep]
        self.going = [renumber[old] for old in self.going]
