"""The local judge's attention: transformers' SDPA attention, minus a copy of the key/value cache.

SmolLM2 has 3 key/value heads for 9 query heads. For one query position under a mask
transformers regroups the query (no copy); for several (a prompt run from a stored prefix, a
decode step that checks prompt-lookup proposals) it repeats the keys and values three times
(``repeat_kv``): a copy of the whole cache in every layer at every step. That was 17 % of a
decode step's time (one torch thread, 4 rows of 2 positions over 600 cached; bench/README.md,
"local judge"). torch's ``scaled_dot_product_attention`` reads grouped heads itself
(``enable_gqa=True``), with the same result to the bit on these shapes
(tests/shared/test_backends_local.py); every other case goes to transformers' own function.
Registered with transformers' attention and mask interfaces under :data:`NAME`.
"""

from __future__ import annotations

from typing import Any

NAME = "sdpa_grouped_kv"


def grouped_sdpa(module: Any, query: Any, key: Any, value: Any, attention_mask: Any,
                 dropout: float = 0.0, scaling: float | None = None, **kwargs: Any) -> Any:
    """transformers' ``sdpa_attention_forward``, grouped heads read in place when several
    query positions attend under a mask."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    groups = getattr(module, "num_key_value_groups", 1)
    if (query.shape[2] == 1 or groups == 1 or attention_mask is None
            or kwargs.get("position_bias") is not None or kwargs.get("softcap") is not None):
        return sdpa_attention_forward(module, query, key, value, attention_mask,
                                      dropout=dropout, scaling=scaling, **kwargs)
    output = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask, dropout_p=dropout, scale=scaling,
        is_causal=False, enable_gqa=True)
    return output.transpose(1, 2).contiguous(), None


def use_grouped_sdpa(model: Any) -> None:
    """Switch a model that runs transformers' SDPA attention to :func:`grouped_sdpa`."""
    if getattr(model.config, "_attn_implementation", None) != "sdpa":
        return
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import sdpa_mask

    AttentionInterface.register(NAME, grouped_sdpa)
    AttentionMaskInterface.register(NAME, sdpa_mask)
    model.set_attn_implementation(NAME)
