import { Marked } from "marked";

// Markdown from documents is untrusted: raw HTML in it is shown as text, and links
// keep only http(s) and mailto targets.
const md = new Marked({
  gfm: true,
  async: false,
  renderer: {
    html({ text }) {
      return escapeHTML(text);
    },
    link({ href, text }) {
      const safe = /^(https?:|mailto:)/i.test(href) ? href : "#";
      return `<a href="${escapeHTML(safe)}" rel="noopener noreferrer nofollow" target="_blank">${escapeHTML(text)}</a>`;
    },
    image({ text }) {
      return `<span class="md-image">[image: ${escapeHTML(text)}]</span>`;
    },
  },
});

export function escapeHTML(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

export function renderMarkdown(src: string): string {
  return md.parse(src) as string;
}
