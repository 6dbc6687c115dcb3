"""BERTScore (Zhang et al. 2020) from a local model directory: nothing is ever downloaded.

Staff point the studio at a directory holding a Hugging Face encoder (config, weights and
tokenizer) with `DIALTOM_BERTSCORE_MODEL_DIR`; without one, or without PyTorch, the report's
BERTScore column stays empty and says why (`availability`).

The score is the paper's F1 without idf weighting or baseline rescaling: every token of the
candidate is matched greedily to its most similar reference token by the cosine of the
encoder's last hidden states, and the other way round (special tokens left out); with
several references, the best F1 over them counts, averaged over the inferences.
"""
from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

from django.conf import settings


def availability() -> tuple[bool, str]:
    """(True, "") when BERTScore can be computed here, else (False, why not)."""
    model_dir = settings.DIALTOM_BERTSCORE_MODEL_DIR
    if not model_dir:
        return False, "no local model directory is set (DIALTOM_BERTSCORE_MODEL_DIR); nothing is downloaded"
    if not (Path(model_dir) / "config.json").is_file():
        return False, f"{model_dir} holds no model (config.json is missing)"
    missing = [name for name in ("torch", "transformers") if importlib.util.find_spec(name) is None]
    if missing:
        return False, f"{', '.join(missing)} not installed: BERTScore needs an encoder to run"
    return True, ""


@lru_cache(maxsize=2)
def _encoder(model_dir: str):
    from transformers import AutoModel, AutoTokenizer  # noqa: PLC0415 - optional, heavy

    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    model = AutoModel.from_pretrained(model_dir, local_files_only=True)
    model.eval()
    return tokenizer, model


def _embeddings(texts: list[str], *, model_dir: str):
    import torch  # noqa: PLC0415

    tokenizer, model = _encoder(model_dir)
    out = []
    with torch.no_grad():
        for text in texts:
            encoded = tokenizer(text, return_tensors="pt", truncation=True, return_special_tokens_mask=True)
            special = encoded.pop("special_tokens_mask")[0].bool()
            hidden = model(**encoded).last_hidden_state[0][~special]
            out.append(torch.nn.functional.normalize(hidden, dim=-1))
    return out


def f1(candidate, reference) -> float:
    """Greedy-matching F1 of two normalised token-embedding matrices."""
    similarity = candidate @ reference.T
    precision = similarity.max(dim=1).values.mean().item()
    recall = similarity.max(dim=0).values.mean().item()
    return 0.0 if precision + recall <= 0 else 2 * precision * recall / (precision + recall)


def best_f1(*, inference: str, references: list[str], model_dir: str) -> float:
    """The best F1 of an inference over its references."""
    candidate, *encoded = _embeddings([inference, *references], model_dir=model_dir)
    return max(f1(candidate, ref) for ref in encoded)


def run_scores(*, run) -> dict[str, float | None]:
    """attribute (and "all") → mean best BERTScore F1 of a similarity run's inferences
    against the accepted references (inferences without a reference are skipped, as for BLEU)."""
    from references.selectors import accepted_references_by_context  # noqa: PLC0415

    references = accepted_references_by_context(reference_set_id=run.reference_set_id)
    model_dir = settings.DIALTOM_BERTSCORE_MODEL_DIR
    groups: dict[str, list[float]] = {"all": []}
    for record in run.inferences:
        refs = references.get((record["context_id"], record["attribute"]))
        if refs:
            value = best_f1(inference=record["text"], references=refs, model_dir=model_dir)
            groups.setdefault(record["attribute"], []).append(value)
            groups["all"].append(value)
    return {attribute: sum(values) / len(values) if values else None for attribute, values in groups.items()}
