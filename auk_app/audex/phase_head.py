"""The output head cut down to the ids the RVQ phase mask can allow: 4,097 of ~205k rows.

Under the mask a position draws from one row of :func:`~auk_app.audex.phase_table.allowed_table`:
phase p's 1,024 codec ids, those of phase 0 plus ``<audiogen_end>`` on a frame boundary, or
``<audiogen_end>`` alone at the cap. Every other id is -inf and has probability 0, so computing it
is wasted work: at 2B the full head is ~840 MB of bf16 weights (a fifth of what a step reads) and
a [2, 205k] float32 cast, blend, sort and softmax after it. :class:`PhaseHead` multiplies the
final hidden state by the 4,097 rows any position can allow (4 × 1,024 codec ids and the end id;
~18 MB at 2B with the padding rows below), blends and casts only those, and draws over the
≤ 1,025 columns of the position's row, padded to one width (1,025) with -inf so that one CUDA
graph serves every row. On an H200 a graphed 2B token (CFG pair) takes 4.50 ms this way, against
5.00 ms through the whole head without the mask and 5.5 ms through the whole head with it.

Why the draw is the full masked draw's (:func:`~auk_app.audex.decode.draw`):

* each column's logit is the full head's logit of that id, to the bit: the same rows times the
  same hidden state, summed in the same order once the rows are padded (:class:`PhaseHead`); the
  CFG blend and temperature act per id;
* the draw sorts stably, so the full path's ranks 0..A-1 are the A allowed ids by score, ties in
  ascending id order, and so are the restricted ranks, whose columns are in ascending id order;
  every later rank is -inf in both (masked ids there, padding here);
* top-k's threshold is the k-th ranked score: the same score while k ≤ A, -inf (nothing dropped)
  in both beyond that; the softmax and top-p's running totals see the same terms in the same
  order, plus exact zeros (exp(-inf)) past rank A-1;
* the noise is drawn for the LM's whole vocabulary as in the full draw and read at ranks 0..W-1,
  so both meet the same numbers at the same ranks and leave the generator in the same state.

So the distribution over the allowed ids is the full masked one exactly, and on CPU the tokens
are the same bit for bit (the tests). A GPU's softmax and scan may group the same terms otherwise
for another width, moving a total by an ulp: a token could differ only where a top-p total or two
ids' p/E tie within that ulp; the H200's real-size bench runs give the same 2 × 512 tokens.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


ROW_MULTIPLE = 256  # head rows are padded to a multiple of this; 205,312 = 802 × 256 at 2B


class PhaseHead:
    """The head rows any mask row allows, and each mask row's columns of them.

    ``ids`` [U]: ids allowed by some row, ascending, then the last one repeated up to a multiple of
    ``ROW_MULTIPLE`` (4,097 -> 4,352). A matrix product may sum a ragged last block of columns in
    another order than the full head sums those ids, and a same-seed draw needs every logit to the
    bit: with 4,097 rows the last logit comes out 1 ulp off on CPU (float32), and 5 of 4,097 bf16
    logits up to 0.125 off on an H200 (a random 2B-shaped head); with 4,352 none does. The repeats
    are never drawn.
    ``row_columns`` [rows, W]: each row's allowed ids as indices into ``ids``, ascending, then
    padding; ``row_ids`` [rows, W] their token ids; ``padding`` [rows, W] True at padding.
    ``weight_rows`` [U, d] is refilled from the LM by :meth:`gather_rows` once per request, so it
    follows the LM's weights.
    """

    def __init__(self, allowed: torch.Tensor, lm_head: torch.nn.Linear) -> None:
        if lm_head.bias is not None:
            raise ValueError("PhaseHead gathers weight rows only; this LM's output head has a bias.")
        union = allowed.any(0).nonzero()[:, 0]
        in_union = allowed[:, union]  # [rows, U before padding]
        self.width = int(in_union.sum(1).max())
        # A stable sort of "not allowed" puts each row's allowed columns first, in ascending id order.
        self.row_columns = (~in_union).to(torch.uint8).sort(dim=1, stable=True).indices[:, : self.width].contiguous()
        self.row_ids = union[self.row_columns]
        self.padding = ~in_union.gather(1, self.row_columns)
        self.ids = torch.cat((union, union[-1:].expand(-len(union) % ROW_MULTIPLE)))
        weight = lm_head.weight
        # Zeros, not empty: a new pooled state's capture warm-up steps run before any prefill fills it.
        self.weight_rows = torch.zeros(len(self.ids), weight.shape[1], dtype=weight.dtype, device=weight.device)

    def gather_rows(self, lm_head: torch.nn.Linear) -> None:
        """Copy the allowed rows of ``lm_head``'s weight into :attr:`weight_rows` (same address)."""
        torch.index_select(lm_head.weight.detach(), 0, self.ids, out=self.weight_rows)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """float32 logits [r, U] of ``hidden`` [r, 1, d] at :attr:`ids`: the full head's, cut down."""
        return F.linear(hidden, self.weight_rows)[:, 0].float()

    def restrict(self, scores: torch.Tensor, row: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Scores [U] -> mask row ``row``'s ([1], on the device) scores [W], -inf at padding, and
        the token ids [W] of those columns."""
        columns = self.row_columns.index_select(0, row)[0]
        restricted = scores.gather(0, columns).masked_fill(self.padding.index_select(0, row)[0], float("-inf"))
        return restricted, self.row_ids.index_select(0, row)[0]
