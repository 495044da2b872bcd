"""Transcript text to HTML: Markdown, code, diffs and terminal output, including hostile input."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.utils.safestring import SafeString
from hypothesis import given, settings
from hypothesis import strategies as st

from sessions_app.rendering import (
    MARKDOWN_LIMIT,
    code_html,
    diff_html,
    markdown_html,
    split_numbered_lines,
    split_reminders,
    strip_ansi,
    truncate,
)

TAG_RE = re.compile(r"<([a-zA-Z][a-zA-Z0-9]*)")


def tags(html: str) -> set[str]:
    return {name.lower() for name in TAG_RE.findall(html)}


def attributes(html: str) -> set[str]:
    """Names of all attributes on real tags (escaped text has no tags)."""
    return {
        name.lower()
        for attrs in re.findall(r"<[a-zA-Z][a-zA-Z0-9]*([^>]*)>", html)
        for name in re.findall(r'([^\s=]+)="[^"]*"', attrs)
    }


def rows(html: str, kind: str) -> list[tuple[str, str, str]]:
    """(old number, new number, text) of each diff row of one kind."""
    pattern = (
        rf'<tr class="{kind}"><td class="ln">(\d*)</td><td class="ln">(\d*)</td>'
        r'<td class="sign">[^<]*</td><td class="text">([^<]*)</td></tr>'
    )
    return re.findall(pattern, html)


# Markdown


def test_markdown_basics_and_safe_string():
    html = markdown_html("# Title\n\nSome **bold**, *em*, ~~gone~~ and `code`.\n\n> quoted\n")
    assert isinstance(html, SafeString)
    assert "<h1>Title</h1>" in html
    assert "<strong>bold</strong>" in html
    assert "<em>em</em>" in html
    assert "<s>gone</s>" in html
    assert "<code>code</code>" in html
    assert "<blockquote>" in html


def test_markdown_table_renders_with_alignment_as_attribute():
    html = markdown_html("| a | b | c |\n|:--|--:|---|\n| 1 | 2 | 3 |\n")
    assert "<table>" in html and "<thead>" in html and "<tbody>" in html
    assert '<th align="left">a</th>' in html
    assert '<td align="right">2</td>' in html
    assert "<td>3</td>" in html
    assert "style=" not in html  # the CSP forbids inline styles


def test_markdown_code_fence_is_highlighted_with_classes():
    html = markdown_html("```python\ndef f(x):\n    return x  # why\n```\n")
    assert '<pre class="code">' in html
    assert '<span class="k">def</span>' in html
    assert '<span class="nf">f</span>' in html
    assert '<span class="c1"># why</span>' in html
    assert "style=" not in html


@pytest.mark.parametrize(
    "info", ["no-such-language", "", "{.python}", "\x00", "a" * 500, "\ud800", "`"]
)
def test_markdown_odd_fence_language_falls_back_to_plain(info):
    html = markdown_html(f"```{info}\n<b>x</b> & y\n```\n")
    assert "&lt;b&gt;x&lt;/b&gt; &amp; y" in html
    assert "<b>" not in html


def test_markdown_fence_language_is_the_first_word_of_the_info_string():
    html = markdown_html("```py title=x.py\nimport os\n```\n")
    assert '<span class="kn">import</span>' in html


def test_markdown_script_is_escaped_text():
    html = markdown_html("Hi <script>alert(1)</script> there\n\n<script>\nalert(2)\n</script>\n")
    assert "<script" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "alert(2)" in html  # still shown, as text


def test_markdown_raw_html_is_text_not_elements():
    html = markdown_html('<div onclick="x()">hi</div>\n\n<iframe src="http://evil/"></iframe>')
    assert tags(html) <= {"p"}
    assert "&lt;div onclick=" in html
    assert "&lt;iframe" in html


@pytest.mark.parametrize(
    "source",
    [
        "[x](javascript:alert(1))",
        "[x](JaVaScRiPt:alert(1))",
        "[x](  javascript:alert(1) )",
        "[x](java&#115;cript:alert(1))",
        "[x](%6Aavascript:alert(1))",
        "<javascript:alert(1)>",
        "[x]\n\n[x]: javascript:alert(1)",
        "[x](vbscript:msgbox(1))",
        "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
        "[x](/relative/path)",
        "[x](//evil.example/)",
    ],
)
def test_markdown_unsafe_links_have_no_href(source):
    html = markdown_html(source)
    assert "<a" not in html
    assert "href" not in html


def test_markdown_safe_links_get_rel():
    html = markdown_html(
        '[site](https://example.com/a?b=1&c=2 "T") [plain](http://example.com) <mailto:me@example.com>'
    )
    assert (
        '<a href="https://example.com/a?b=1&amp;c=2" title="T" rel="noopener noreferrer nofollow">'
        in html
    )
    assert 'href="http://example.com"' in html
    assert 'href="mailto:me@example.com"' in html
    assert html.count('rel="noopener noreferrer nofollow"') == 3


def test_markdown_img_tag_with_onerror_is_neutralised():
    html = markdown_html("<img src=x onerror=alert(1)>")
    assert "<img" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def test_markdown_image_is_a_link_not_an_img():
    html = markdown_html("![a](http://evil/x.png)")
    assert "<img" not in html
    assert '<a href="http://evil/x.png" rel="noopener noreferrer nofollow">[image: a]</a>' in html


def test_markdown_image_with_unsafe_source_is_just_text():
    html = markdown_html("![pic *b*](javascript:alert(1)) ![c](data:image/png;base64,AAAA)")
    assert "<img" not in html
    assert "href" not in html


def test_markdown_lists_keep_start_numbers():
    html = markdown_html("3. three\n4. four\n\n- a\n- b\n")
    assert '<ol start="3">' in html
    assert "<ul>" in html and "<li>a</li>" in html


def test_markdown_odd_characters_do_not_raise():
    html = markdown_html("a\x00b \ud800 c\x1b[31m d\x07 e\r\nf\u2028g")
    assert "\x00" not in html and "\x1b" not in html and "\x07" not in html
    assert "\ufffd" in html  # the lone surrogate, replaced
    html.encode("utf-8")  # must be encodable for the response


@pytest.mark.parametrize("value", [None, "", 42, ["not", "text"]])
def test_markdown_non_text_does_not_raise(value):
    assert isinstance(markdown_html(value), SafeString)


def test_markdown_huge_input_completes_and_keeps_everything():
    text = ("Some *text* with [a link](http://example.com) and `code`.\n\n" * 200_000) + "THE END"
    html = markdown_html(text)
    assert len(text) > 10_000_000
    assert "<em>text</em>" in html  # the start is Markdown
    assert html.rstrip().endswith("THE END</pre>")  # the rest is plain, not lost
    assert "<script" not in html


@pytest.mark.parametrize("unit", ["[", "*_", "[a](", "|", "> ", "- ", "&#", "<", "`"])
def test_markdown_pathological_input_completes(unit):
    text = unit * (2 * MARKDOWN_LIMIT // len(unit))
    html = markdown_html(text)
    assert html.count('<pre class="plain">') == 1


# Code listings


def test_code_html_by_language_and_filename():
    by_language = code_html("import os\n", language="python")
    by_filename = code_html("import os\n", filename="/src/app/main.py")
    for html in (by_language, by_filename):
        assert isinstance(html, SafeString)
        assert html.startswith('<pre class="code"><code>')
        assert '<span class="kn">import</span>' in html


def test_code_html_unknown_language_is_plain_escaped():
    html = code_html("<script>alert(1)</script>", language="nope", filename="x.unknownext")
    assert html == '<pre class="code"><code>&lt;script&gt;alert(1)&lt;/script&gt;</code></pre>'


def test_code_html_line_numbers_start_where_told_and_keep_blank_lines():
    html = code_html("\n\nx = 1\n", language="python", start=12)
    assert re.findall(r'<span class="ln">(\d+)</span>', html) == ["12", "13", "14"]
    assert '<span class="ln">14</span><span class="n">x</span>' in html


def test_code_html_escapes_even_when_highlighting_fails_to_apply():
    html = code_html('"</code></pre><script>x</script>', language="python")
    assert "<script>" not in html
    assert html.count("</pre>") == 1


def test_code_html_huge_input_highlights_the_start_only():
    code = "value = 1  # note\n" * 600_000
    html = code_html(code, filename="big.py", start=1)
    assert len(code) > 10_000_000
    assert html.startswith('<pre class="code"><code><span class="ln">1</span><span class="n">value')
    assert '<span class="ln">600000</span>value = 1  # note</code></pre>' in html


# Read tool output


def test_split_numbered_lines_arrow_format():
    text = "    12→def f():\n    13→    return 1\n    14→\n    15→x = f()\n"
    assert split_numbered_lines(text) == (12, "def f():\n    return 1\n\nx = f()")


def test_split_numbered_lines_tab_format():
    assert split_numbered_lines("     1\tone\n     2\ttwo") == (1, "one\ntwo")


def test_split_numbered_lines_drops_the_trailing_system_reminder():
    text = (
        "     1→import os\n     2→print(os)\n\n<system-reminder>\n"
        "Whenever you read a file, you should consider whether it looks malicious.\n"
        "</system-reminder>\n"
    )
    assert split_numbered_lines(text) == (1, "import os\nprint(os)")
    body, reminders = split_reminders(text)
    assert body == "     1→import os\n     2→print(os)"
    assert reminders.startswith("<system-reminder>") and reminders.endswith("</system-reminder>")


@pytest.mark.parametrize(
    "text",
    [
        "plain text\nno numbers",
        "",
        "     1→a\nnot numbered\n     3→c",
        "10\tapples\n20\tpears",  # tab-separated data, not a listing
        "     1→a\n\n     2→b",
        "<system-reminder>the file is empty</system-reminder>",
    ],
)
def test_split_numbered_lines_leaves_other_text_alone(text):
    assert split_numbered_lines(text) == (None, text)


def test_split_numbered_lines_feeds_code_html():
    start, body = split_numbered_lines("     7→x = 1\n     8→y = 2")
    html = code_html(body, filename="a.py", start=start)
    assert re.findall(r'<span class="ln">(\d+)</span>', html) == ["7", "8"]
    assert "→" not in html


# Diffs


def test_diff_of_a_small_edit():
    old = "one\ntwo\nthree\nfour\nfive\n"
    new = "one\ntwo\nTHREE\nfour\nfive\n"
    html = diff_html(old, new, filename="notes.txt")
    assert isinstance(html, SafeString)
    assert "<caption>notes.txt</caption>" in html
    assert '<tr class="hunk"><td colspan="4">@@ -1,5 +1,5 @@</td></tr>' in html
    assert rows(html, "del") == [("3", "", "three")]
    assert rows(html, "add") == [("", "3", "THREE")]
    assert rows(html, "ctx") == [
        ("1", "1", "one"),
        ("2", "2", "two"),
        ("4", "4", "four"),
        ("5", "5", "five"),
    ]


def test_diff_context_and_separate_hunks():
    old = "\n".join(f"line {i}" for i in range(1, 41))
    new = old.replace("line 5\n", "line five\n").replace("line 35\n", "")
    html = diff_html(old, new, context=2)
    assert html.count('class="hunk"') == 2
    assert "@@ -3,5 +3,5 @@" in html
    assert "@@ -33,5 +33,4 @@" in html
    assert rows(html, "del") == [("5", "", "line 5"), ("35", "", "line 35")]
    assert rows(html, "add") == [("", "5", "line five")]


def test_diff_of_a_new_file_is_all_additions():
    html = diff_html("", "a\nb\n")
    assert "@@ -0,0 +1,2 @@" in html
    assert rows(html, "add") == [("", "1", "a"), ("", "2", "b")]
    assert rows(html, "del") == []


def test_diff_without_changes():
    assert "(no changes)" in diff_html("same\n", "same\n")


def test_diff_escapes_content_and_filename():
    html = diff_html("<b>old</b>", "<script>alert(1)</script>", filename="<img src=x>.py")
    assert "<script" not in html and "<img" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<caption>&lt;img src=x&gt;.py</caption>" in html


def test_diff_huge_input_completes():
    old = "".join(f"line {i}\n" for i in range(1_000_000))
    new = old.replace("line 10\n", "line ten\n")
    html = diff_html(old, new)
    assert len(old) > 10_000_000
    assert rows(html, "del") == [("11", "", "line 10")]
    assert rows(html, "add") == [("", "11", "line ten")]
    assert "(diff cut short: too long)" in html


# Terminal output


def test_strip_ansi_colours_titles_and_controls():
    text = "\x1b[1;31mError\x1b[0m: \x1b]0;window title\x07bad\x1b(B\x1b[m\x00\x08\x7f\tok\n"
    assert strip_ansi(text) == "Error: bad\tok\n"


def test_strip_ansi_osc_hyperlink_keeps_its_text():
    text = "\x1b]8;;http://example.com\x1b\\link\x1b]8;;\x1b\\ done"
    assert strip_ansi(text) == "link done"


def test_strip_ansi_keeps_the_final_state_of_redrawn_lines():
    text = "Downloading  10%\rDownloading 100%\r\nDone\r\n"
    assert strip_ansi(text) == "Downloading 100%\nDone\n"


def test_strip_ansi_odd_input():
    assert strip_ansi("\ud800x\x9b31my") == "\ufffdxy"
    assert strip_ansi(None) == ""
    assert strip_ansi("\x1b") == ""


def test_strip_ansi_huge_input_completes():
    text = "\x1b[32mok\x1b[0m line\n" * 700_000
    out = strip_ansi(text)
    assert len(text) > 10_000_000
    assert out == "ok line\n" * 700_000


# Truncation


def test_truncate_short_text_is_untouched():
    assert truncate("abc\ndef", 100) == ("abc\ndef", False)


def test_truncate_at_a_line_boundary():
    text = "".join(f"line {i:03}\n" for i in range(100))  # 9 characters a line
    cut, was_cut = truncate(text, 95)
    assert was_cut
    assert cut == text[:89] and cut.endswith("line 009")
    assert len(cut) <= 95


def test_truncate_long_line_is_cut_at_the_limit():
    assert truncate("x" * 50, 10) == ("x" * 10, True)


def test_truncate_odd_limits_and_input():
    assert truncate("abc", 0) == ("", True)
    assert truncate("abc", -5) == ("", True)
    assert truncate("", 0) == ("", False)
    assert truncate(None, 10) == ("", False)
    assert truncate("a" * 10_000_000, 5) == ("aaaaa", True)


# Any input at all


MARKUP = st.sampled_from(
    ["<", ">", "&", "[", "]", "(", ")", "!", "*", "_", "`", "```", "~~", "|", "-", "#", ">",
     "\n", " ", "javascript:", "http://x", "<script>", "<img src=x onerror=y>", "\x00", "\x1b[",
     "\ud800", "\r", "\t", "1.", "    ", "&#106;", "=", '"', "'"]
)  # fmt: skip
ALLOWED = {"p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s"}
ALLOWED |= {"code", "pre", "blockquote", "ul", "ol", "li", "table", "thead", "tbody", "tr"}
ALLOWED |= {"th", "td", "a", "span", "div"}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(MARKUP, st.text(max_size=5)), max_size=40).map("".join))
def test_any_text_renders_to_allowed_markup_only(text):
    for html in (markdown_html(text), code_html(text, language="html", start=1)):
        html.encode("utf-8")
        assert tags(html) <= ALLOWED
        assert attributes(html) <= {"href", "title", "rel", "class", "align", "start"}
        for href in re.findall(r'href="([^"]*)"', html):
            assert href.startswith(("http://", "https://", "mailto:"))
    diff = diff_html(text, text[::-1])
    diff.encode("utf-8")
    assert tags(diff) <= {"table", "caption", "tr", "td"}
    assert "\x1b" not in strip_ansi(text)


# --- Contrast of highlighted code and diffs (WCAG AA: 4.5:1 for normal text) ---

STATIC = Path(__file__).resolve().parent.parent / "static" / "sessions_app"
DARK_PREFIX = ':root[data-theme="dark"] '


def _channel(value: int) -> float:
    v = value / 255
    return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4


def contrast(fg: str, bg: str) -> float:
    """The WCAG contrast ratio of two #rgb / #rrggbb colours."""

    def luminance(colour: str) -> float:
        h = colour.lstrip("#")
        h = "".join(c * 2 for c in h) if len(h) == 3 else h
        r, g, b = (_channel(int(h[i : i + 2], 16)) for i in (0, 2, 4))
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    high, low = sorted((luminance(fg), luminance(bg)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def css_rules(css: str) -> dict[str, dict[str, str]]:
    """Top-level `selector { prop: value }` rules by selector (later ones win)."""
    rules: dict[str, dict[str, str]] = {}
    for selector, body in re.findall(r"^([^\s@}][^{\n]*?)\s*\{([^}]*)\}", css, re.M):
        props = dict(re.findall(r"(?<![\w-])([\w-]+)\s*:\s*([^;]+?)\s*(?:;|$)", body))
        for one in selector.split(","):
            rules.setdefault(one.strip(), {}).update(props)
    return rules


def theme_colours() -> dict[str, dict[str, str]]:
    """app.css's custom properties for the light and the dark theme."""
    rules = css_rules((STATIC / "app.css").read_text())
    light, dark = rules[":root"], rules[':root[data-theme="dark"]']
    return {"light": light, "dark": dark}


def effective(rules: dict[str, dict[str, str]], selector: str, theme: str) -> dict[str, str]:
    """A selector's properties in a theme: the dark rule over the light one in dark."""
    props = dict(rules.get(selector, {}))
    if theme == "dark":
        props.update(rules.get(DARK_PREFIX + selector, {}))
    return props


def resolve(value: str, variables: dict[str, str]) -> str:
    found = re.fullmatch(r"var\((--[\w-]+)\)", value)
    return variables[found.group(1)] if found else value


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_code_line_numbers_comments_and_tokens_meet_wcag_aa(theme: str) -> None:
    css = (STATIC / "highlight.css").read_text()
    rules = css_rules(css)
    variables = theme_colours()[theme]
    tokens = sorted({s.removeprefix(DARK_PREFIX) for s in rules if ".code ." in s})
    assert ".code .ln" in tokens and ".code .c1" in tokens  # the parse found the rules
    low = {}
    for selector in tokens:
        props = effective(rules, selector, theme)
        if "color" not in props:
            continue
        background = props.get("background-color", "transparent")
        if background == "transparent":
            background = variables["--code-bg"]
        colour = resolve(props["color"], variables)
        ratio = contrast(colour, resolve(background, variables))
        if ratio < 4.5:
            low[selector] = round(ratio, 2)
    assert low == {}


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_diff_line_numbers_meet_wcag_aa(theme: str) -> None:
    rules = css_rules((STATIC / "highlight.css").read_text())
    variables = theme_colours()[theme]
    table = effective(rules, "table.diff", theme)
    background = resolve(table["background"], variables)
    for selector in ("table.diff td.ln", "table.diff td.sign"):
        colour = resolve(effective(rules, selector, theme)["color"], variables)
        assert contrast(colour, background) >= 4.5, selector


def test_dark_colours_are_the_same_for_the_system_and_the_toggle() -> None:
    css = (STATIC / "highlight.css").read_text()
    toggle = {s: p for s, p in css_rules(css).items() if s.startswith(DARK_PREFIX)}
    system_block = css[css.index("@media (prefers-color-scheme: dark)") :]
    system = css_rules(re.sub(r"^\s+", "", system_block, flags=re.M))
    prefix = ':root:not([data-theme="light"]) '
    assert len(toggle) > 80
    for selector, props in toggle.items():
        assert system[prefix + selector.removeprefix(DARK_PREFIX)] == props, selector
