"""What a Read of a non-text file shows: text and images in order, with its cost against the result budget."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp_codetools.files.images import ShownImage


@dataclass
class RichView:
    """Text and images in the order the model should see them, and facts for `meta`."""

    blocks: list[str | ShownImage] = field(default_factory=list)
    meta: dict[str, object] = field(default_factory=dict)
    complete: bool = True
    """False when the view is a part (some pages or cells, an overview, a cut)."""
    digest: str | None = None
    """The content digest when the whole file was read (the ledger judges later changes by it)."""

    def add(self, block: str | ShownImage) -> None:
        """Append a block; text following text joins it, so the result has few content items."""
        if isinstance(block, str) and self.blocks and isinstance(self.blocks[-1], str):
            self.blocks[-1] += block
        else:
            self.blocks.append(block)

    @property
    def images(self) -> list[ShownImage]:
        """The images among the blocks, in order."""
        return [block for block in self.blocks if not isinstance(block, str)]

    def cost_chars(self) -> int:
        """Characters this view costs against the result budget (an image counts its tokens × 4)."""
        return sum(len(b) if isinstance(b, str) else 4 * b.tokens for b in self.blocks)

    def split(self) -> tuple[str, list[ShownImage], dict[int, str]]:
        """The leading text, the images, and the text after image i (the shape a tool result takes)."""
        head = ""
        images: list[ShownImage] = []
        trailing: dict[int, str] = {}
        for block in self.blocks:
            if not isinstance(block, str):
                images.append(block)
            elif images:
                trailing[len(images) - 1] = trailing.get(len(images) - 1, "") + block
            else:
                head += block
        return head, images, trailing
