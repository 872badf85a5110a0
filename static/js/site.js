// site.js: small things every page gets.
//
//   - Times: each <time data-local datetime="..."> shows its instant in
//     the reader's own time zone, in one format ("3 Mar 2026, 14:05 CET"),
//     also in blocks scripts put in later; without script the page's UTC
//     text stays.
//   - Lesson contents (nav[data-lesson-nav]): the link of the section being
//     read gets aria-current="location" as the reader scrolls; on narrow
//     screens the list folds into a bar that stays at the top, with a
//     Contents button naming the current section and the lessons before
//     and after. Without script the contents are a plain list.

const timeFormat = new Intl.DateTimeFormat(undefined, {
  year: "numeric",
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
  timeZoneName: "short",
});

export function localTimes(root = document) {
  for (const el of root.querySelectorAll("time[data-local]")) {
    const at = new Date(el.getAttribute("datetime"));
    if (Number.isNaN(at.getTime())) continue;
    if (!el.title) el.title = el.textContent.trim(); // the UTC text, on hover
    el.textContent = timeFormat.format(at);
  }
}

// narrow matches the screens on which the contents fold (app.css).
const narrow = matchMedia("(max-width: 63.99rem)");

function lessonContents(nav) {
  const links = [...nav.querySelectorAll(".toc a[href^='#']")];
  const targets = links.map((a) => document.getElementById(decodeURIComponent(a.hash.slice(1))));
  const list = nav.querySelector(".toc");

  // The Contents button, which folds the list on narrow screens.
  const bar = document.createElement("div");
  bar.className = "lesson-nav-toggle";
  const button = document.createElement("button");
  button.type = "button";
  button.setAttribute("aria-expanded", "false");
  button.setAttribute("aria-controls", list.id);
  const label = document.createElement("span");
  label.textContent = "Contents";
  const where = document.createElement("span");
  where.className = "where";
  button.append(label, where);
  bar.append(button);
  nav.prepend(bar);
  nav.classList.add("folding");

  const setOpen = (open) => {
    nav.classList.toggle("open", open);
    button.setAttribute("aria-expanded", String(open));
  };
  button.addEventListener("click", () => setOpen(!nav.classList.contains("open")));
  nav.addEventListener("click", (e) => {
    if (e.target.closest(".toc a") && narrow.matches) setOpen(false);
  });
  nav.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && nav.classList.contains("open")) {
      setOpen(false);
      button.focus();
    }
  });

  // The section being read: the last whose heading has passed a line a
  // fifth of the way down the window.
  let current = -1;
  const mark = () => {
    const line = innerHeight / 5;
    let at = 0;
    targets.forEach((t, i) => {
      if (t && t.getBoundingClientRect().top <= line) at = i;
    });
    if (at === current) return;
    current = at;
    links.forEach((a, i) => {
      if (i === at) a.setAttribute("aria-current", "location");
      else a.removeAttribute("aria-current");
    });
    where.textContent = at > 0 ? links[at].textContent : "";
    // Keep the current link in view in a sidebar taller than the window.
    const a = links[at];
    if (
      !narrow.matches &&
      nav.scrollHeight > nav.clientHeight &&
      (a.offsetTop < nav.scrollTop || a.offsetTop + a.offsetHeight > nav.scrollTop + nav.clientHeight)
    ) {
      nav.scrollTop = a.offsetTop - nav.clientHeight / 3;
    }
  };
  let queued = false;
  addEventListener(
    "scroll",
    () => {
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => {
        queued = false;
        mark();
      });
    },
    { passive: true },
  );
  addEventListener("resize", mark, { passive: true });
  mark();
}

function init() {
  localTimes();
  // Blocks that scripts put in later (a lesson block after an answer, a
  // run panel, a class's answer) show their times the same way.
  new MutationObserver((records) => {
    for (const r of records) {
      for (const n of r.addedNodes) {
        if (n.nodeType !== Node.ELEMENT_NODE) continue;
        if (n.matches("time[data-local]")) localTimes(n.parentNode);
        else localTimes(n);
      }
    }
  }).observe(document.body, { childList: true, subtree: true });
  for (const nav of document.querySelectorAll("nav[data-lesson-nav]")) {
    if (nav.dataset.enhanced) continue;
    nav.dataset.enhanced = "1";
    lessonContents(nav);
  }
}

init();
