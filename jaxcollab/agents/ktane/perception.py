"""GPTNT's perceptual difficulties as text options of the Keep-Talking LLM game.

The environment names keypad glyphs by the manual's own words and puts the timer and strike
counter in every view; both remove difficulties GPTNT measures. Two options put them back:

* ``ktane.glyphs=described`` (GPTNT §10.1: "different models generate different descriptions
  for the same symbol on more than half of the questions"): each keypad glyph reaches the
  Defuser, and the manual's keypad columns reach whoever reads them, as a verbal description
  from :data:`DESCRIPTIONS` (several per glyph, ours), the two drawn different per episode and
  glyph (:func:`glyph_words`), so the players must agree on what they call each symbol.
* ``ktane.hud=gptnt`` (GPTNT §8, S.1.1: models misread the clock and miss strikes): the timer
  and the strike counter, which on the real bomb sit on the timer's own face, are shown only
  while the Defuser looks at that face without zooming into a module (:func:`gptnt_hud`). Our
  bomb has no timer slot; putting it on the front face is ours.
"""

from __future__ import annotations

import re

import numpy as np

from jaxcollab.envs.ktane import tables as KT

GLYPHS = ("names", "described")
HUDS = ("always", "gptnt")
#: Verbal descriptions of each keypad glyph (ours, three a glyph, none using the manual's name):
#: the Defuser and the manual each get one, different, per episode (:func:`glyph_words`).
DESCRIPTIONS = {
    "balloon": ("a circle with a short line hanging below it", "a ring on a stalk",
                "an O with a small tail dangling from its bottom"),
    "at": ("a capital A with a curl on its foot", "a triangle-like letter with a hooked tail",
           "an A shape whose right leg ends in a loop"),
    "upside-down-y": ("a lambda with a small bar", "an inverted Y with a tick on its stem",
                      "two legs meeting at the top with one leg longer"),
    "squiggly-n": ("a lightning-bolt zigzag", "a wavy N with a hanging tail",
                   "a sideways S stretched tall"),
    "squid-knife": ("a tent over three short legs", "a triangle with tentacles below",
                    "a house outline with a bar across and legs"),
    "hook-n": ("an H whose right side curls down into a hook", "a ladder piece with a hooked leg",
               "two posts joined in the middle, one ending in a hook"),
    "left-c": ("a reversed C with a dot in its middle", "a backwards crescent with a dot",
               "a half-moon opening to the left around a dot"),
    "euro": ("an E with two bars and a dotted top", "a C crossed by two horizontal strokes",
             "a currency-like sign with double crossbar and two dots"),
    "cursive": ("a looped handwritten letter like a curly e", "a squiggle with a loop on top",
                "a script letter with two joined loops"),
    "hollow-star": ("an outlined five-pointed star", "a star drawn as an empty outline",
                    "a five-point shape, white inside"),
    "question-mark": ("an inverted hook over a dot", "a hook with a dot above it",
                      "a curve ending in a dot at the top"),
    "copyright": ("a C inside a circle", "a ring with a letter C in it",
                  "an encircled open curve"),
    "pumpkin": ("a W with a curl above", "a round double-bump shape with a stem",
                "three lobes side by side with a small tail on top"),
    "double-k": ("two Ks back to back", "a mirrored pair of K letters",
                 "a vertical bar with arms spreading both ways"),
    "melted-three": ("a 3 with a drooping tail", "a three whose bottom runs like wax",
                     "a backwards E with rounded melting bumps"),
    "six": ("the digit 6 with a flat top", "a loop with a stroke rising from its left side",
            "a figure like a b with a curved neck"),
    "paragraph": ("a reversed P with a doubled stem", "a pilcrow-like text mark",
                  "a filled loop on two vertical lines"),
    "bt": ("a b and a t joined together", "a letter b with a cross on its stem",
           "a stem with a bowl at the bottom and a crossbar"),
    "smiley": ("a smiling face", "a circle with two eyes and a curved mouth",
               "a round happy face"),
    "pitchfork": ("a trident", "a three-pronged fork", "a psi-like symbol, a U on a stem"),
    "right-c": ("a C with a dot in its middle", "a crescent opening to the right around a dot",
                "a half-moon with a dot inside"),
    "dragon": ("a curled creature with a tail", "a snake-like figure with a head and wings",
               "a swirling beast shape"),
    "filled-star": ("a solid black five-pointed star", "a star filled in dark",
                    "a five-point shape, black inside"),
    "tracks": ("two vertical lines crossed by short bars", "a ladder-like pair of rails",
               "a double bar like a railway"),
    "ae": ("the letters a and e joined", "a ligature of A and E",
           "an A fused with an E, sharing a stroke"),
    "n-with-hat": ("an N with a mark above it", "a capital N under a small bar",
                   "a zigzag N wearing a cap"),
    "omega": ("a horseshoe with feet", "an upside-down U with the ends turned out",
              "an arch standing on two little feet"),
}
#: A keypad key's line in the Defuser's view: ``[A] TL cursive unlit`` (label optional: the
#: previous frame comes unlabelled, GPTNT App. D.4).
_KEY = re.compile(r"^((?:\[[A-Z]\] )?(?:" + "|".join(KT.KEYPAD_POSITIONS) + r") )(\S+)( |$)",
                  re.M)
#: A column line of the manual's keypad section: ``  column 3: copyright, pumpkin, …``.
_COLUMN = re.compile(r"^(  column \d: )(.*)$", re.M)
#: The header lines the real bomb shows only on the timer's face (:func:`gptnt_hud`).
_HUD = re.compile(r"^(time|strikes) .*\n?", re.M)
_SEED = 0x6C79  # glyph_words' stream, beside the episode index (ours)


def glyph_words(index: int) -> tuple[dict[str, str], dict[str, str]]:
    """``(defuser, manual)``: each keypad glyph's description for episode ``index``, two
    different entries of :data:`DESCRIPTIONS` (the same on every rerun of the episode)."""
    rng = np.random.default_rng([_SEED, int(index)])
    picks = {g: rng.choice(len(d), 2, replace=False) for g, d in DESCRIPTIONS.items()}
    return ({g: DESCRIPTIONS[g][i] for g, (i, _) in picks.items()},
            {g: DESCRIPTIONS[g][j] for g, (_, j) in picks.items()})


def describe_view(text: str, words: dict[str, str]) -> str:
    """The Defuser's view with each keypad key's glyph name replaced by ``words[name]`` in
    quotes (other lines untouched)."""
    return _KEY.sub(lambda m: f"{m[1]}\"{words.get(m[2], m[2])}\"{m[3]}", text)


def describe_manual(text: str, words: dict[str, str]) -> str:
    """The manual with the keypad columns' glyph names replaced by ``words`` (one description
    a line's entry, separated by ``;``, in quotes)."""
    def column(m: re.Match) -> str:
        names = [n.strip() for n in m[2].split(",")]
        if not all(n in words for n in names):
            return m[0]
        return m[1] + "; ".join(f"\"{words[n]}\"" for n in names)
    return _COLUMN.sub(column, text)


def gptnt_hud(text: str) -> str:
    """The Defuser's view with the ``time`` and ``strikes`` lines dropped unless it looks at
    the front face, zoomed into no module (where our bomb's timer sits)."""
    if re.search(r"^face front$", text, re.M) and re.search(r"^zoom none$", text, re.M):
        return text
    return _HUD.sub("", text)


__all__ = ["DESCRIPTIONS", "GLYPHS", "HUDS", "describe_manual", "describe_view", "glyph_words",
           "gptnt_hud"]
