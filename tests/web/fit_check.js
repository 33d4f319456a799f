// What tests/web/layout.py checks on a page (its docstring says what): a list of problems.
// Each character's line is the top of its first client rect; a line change between two
// characters of the same block is a break there. Text in inline elements (links, spans,
// <wbr>-split names) counts with its block; a new block starts afresh.
(() => {
  const problems = [];
  const width = innerWidth;
  const page = document.documentElement.scrollWidth;
  if (page > width) problems.push(`the page scrolls sideways: ${page} > ${width}`);
  const say = (el) =>
    `${el.tagName.toLowerCase()}.${el.className} "${el.textContent.slice(0, 60)}"`;
  const shownEl = (el) =>
    el.getClientRects().length > 0 && !el.closest("[hidden], .visually-hidden");
  const boxes = "main .table-wrap, main table, main th, main td, main h1, main h2, main dd, " +
    "main dt, main .name";
  for (const el of document.querySelectorAll(boxes)) {
    if (!shownEl(el)) continue;
    const cs = getComputedStyle(el);
    if (cs.display === "inline") continue; // no box width of its own: its block is checked
    if (el.scrollWidth > el.clientWidth + 1) {
      const ellipsised = cs.textOverflow === "ellipsis" && el.title === el.textContent;
      const sizes = `${el.scrollWidth} > ${el.clientWidth}`;
      if (!ellipsised) problems.push(`wider than its box (${sizes}): ${say(el)}`);
    }
  }
  for (const el of document.querySelectorAll("main .name")) {
    const cs = getComputedStyle(el);
    const anywhere = cs.overflowWrap === "anywhere" || cs.overflowWrap === "break-word";
    if (cs.wordBreak === "break-all" || anywhere) {
      problems.push(`a name may break anywhere (${cs.wordBreak}, ${cs.overflowWrap}): ${say(el)}`);
    }
  }
  const SEP = /[\s\-:._\/·,…]/;
  const blockOf = (node) => {
    let el = node.parentElement;
    while (el && getComputedStyle(el).display === "inline") el = el.parentElement;
    return el;
  };
  const range = document.createRange();
  const roots = document.querySelectorAll(
    "main h1, main h2, main th, main td:not(.fields), main dd, main dt, main .pager");
  for (const root of roots) {
    if (!shownEl(root)) continue;
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    let prev = null; // {block, top, ch}
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (!node.parentElement || !shownEl(node.parentElement)) continue;
      const block = blockOf(node);
      if (prev && prev.block !== block) prev = null;
      const text = node.data;
      for (let i = 0; i < text.length; i++) {
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const rect = range.getClientRects()[0];
        const ch = text[i];
        if (!rect) { // a space collapsed at a line's end has no box, yet the line broke at it
          if (prev && /\s/.test(ch)) prev = { ...prev, ch };
          continue;
        }
        if (prev && rect.top > prev.top + rect.height / 2 && !SEP.test(prev.ch) && !/\s/.test(ch)) {
          const at = `${text.slice(Math.max(0, i - 12), i)}|${text.slice(i, i + 12)}`;
          problems.push(`broken inside a word at "${at}": ${say(root)}`);
        }
        prev = { block, top: rect.top, ch };
      }
    }
  }
  return problems;
})
