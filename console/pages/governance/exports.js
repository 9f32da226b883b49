// Governance: exports of the user's memory, their files and their deletion
// (docs/console.md "Governance").

import { call, query } from "../../lib/api.js";
import { fill, h, json, text, when } from "../../lib/dom.js";
import { fetchFile, saveFile } from "../../lib/files.js";
import { follow } from "../../lib/jobs.js";
import { replaceParams } from "../../lib/route.js";
import { confirmAction, problem, section } from "../../lib/ui.js";
import { facts, roleHidden, userPath } from "./shared.js";

export async function exportSection(view, roles) {
  if (!roles.has("read")) {
    return section("Export", roleHidden(view, "Exporting a user's memory", "read"));
  }
  const job = h("div", { class: "job" });
  const exportId = h("input", { id: "export-id", name: "export", autocomplete: "off", spellcheck: "false",
    value: view.params.get("export") || "" });
  const open = h("form", { class: "inline-form", "aria-label": "Open an export" },
    h("label", { for: "export-id" }, "Export id"), exportId,
    h("button", { type: "submit" }, "Show"));
  open.addEventListener("submit", (event) => {
    event.preventDefault();
    if (exportId.value.trim()) showExport(view, job, exportId.value.trim());
  });
  const start = async () => {
    try {
      const answer = await call("POST", userPath(view) + ":export" + query({ profile_id: view.profile }));
      exportId.value = answer.body.export_id;
      await showExport(view, job, answer.body.export_id);
    } catch (error) {
      fill(job, problem(error));
    }
  };
  if (exportId.value) showExport(view, job, exportId.value); // fills in as it is followed
  return section("Export",
    h("p", {}, "One archive of everything this user's memory holds that you may read, with memory.md for a ",
      "person to read. Kept 7 days; at most 5 per user."),
    h("div", { class: "actions" }, h("button", { type: "button", onclick: start }, "Export this user's memory")),
    open,
    job,
  );
}

function exportPath(view, exportId, ...rest) {
  return userPath(view, "exports", exportId, ...rest);
}

/** Follow an export until it is done, then list its files. */
async function showExport(view, into, exportId) {
  replaceParams({ export: exportId });
  await follow({
    into,
    live: view.live,
    load: async () => (await call("GET", exportPath(view, exportId))).body,
    show: (job) => exportView(view, into, job),
    ended: (job) => job.status !== "queued" && job.status !== "running",
    fail: problem,
  });
}

function exportView(view, into, job) {
  const status = h("div", { role: "status" });
  const progress = job.progress || {};
  return h("div", { class: "export" },
    h("p", {}, h("strong", {}, `Export: ${job.status}`)),
    facts("Export", [
      ["Export", text(job.export_id)],
      ["Asked by", text(job.requested_by)],
      ["Profile", text(job.profile_id)],
      ["Asked at", when(job.created_at)],
      ["Expires", when(job.expires_at)],
      ["Progress", `${(progress.records || 0).toLocaleString()} records${progress.kind ? `, writing ${progress.kind}` : ""}`],
      "complete" in job ? ["Complete", job.complete ? "yes" : "no: some kinds were left out (below)"] : null,
      job.error ? ["Error", text(job.error.code || job.error)] : null,
    ].filter(Boolean)),
    job.omitted && job.omitted.length ? h("details", {}, h("summary", {}, "Left out"), json(job.omitted)) : null,
    job.files ? h("table", {},
      h("caption", {}, "Files of this export"),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "File"), h("th", { scope: "col" }, "Save"))),
      h("tbody", {}, job.files.map((name) => h("tr", {},
        h("th", { scope: "row" }, text(name)),
        h("td", {}, h("button", { type: "button", "aria-label": `Download ${name}`,
          onclick: () => download(view, job.export_id, name, status) }, "Download")))))) : null,
    h("div", { class: "actions" }, h("button", {
      type: "button", class: "danger", onclick: () => deleteExport(view, into, job.export_id),
    }, "Delete this export…")),
    status,
  );
}

async function download(view, exportId, name, status) {
  fill(status, `Downloading ${name}…`);
  try {
    saveFile(await fetchFile(exportPath(view, exportId, "files", name)), name);
    fill(status, `Saved ${name}.`);
  } catch (error) {
    fill(status, problem(error));
  }
}

async function deleteExport(view, into, exportId) {
  const yes = await confirmAction({
    title: "Delete this export",
    message: `Export ${exportId} of user ${view.user} and its files are deleted now.`,
    action: "Delete export",
  });
  if (!yes) return;
  try {
    await call("DELETE", exportPath(view, exportId));
  } catch (error) {
    fill(into, problem(error));
    return;
  }
  replaceParams({ export: null });
  fill(into, h("p", { role: "status" }, "Export ", text(exportId), " deleted."));
}
