"use strict";
// Starting a conversation from the page (a direct one with a user id, or
// a group founded with its members), and the members a group's header
// names. Runs after app.js and uses its state.
state.started = new Map(); // conv → started here, not in the server's list yet

// keepStarted puts back what was started here and the server has not
// listed yet (a direct conversation starts with its first message).
function keepStarted() {
  for (const [id, c] of state.started) {
    if (state.convs.has(id)) state.started.delete(id); else state.convs.set(id, c);
  }
}

// groupIdOf is the conversation id of a group named name: "g-" and the
// name, spaces as dashes.
function groupIdOf(name) {
  const id = "g-" + name.trim().replace(/^g-/, "").replace(/\s+/g, "-");
  if (/[{}:]/.test(id)) throw new Error("a group name cannot hold {, } or :");
  return id;
}

$("new-conv").addEventListener("submit", async (e) => {
  e.preventDefault();
  const err = $("new-conv-error");
  err.textContent = "";
  const users = $("new-with").value.split(/[\s,]+/).filter((u) => u && u !== state.me);
  const name = $("new-group").value.trim();
  try {
    let c;
    if (!name) {
      if (users.length !== 1) throw new Error(users.length ? "several people: give the group a name" : "name someone to talk to");
      c = { conv_id: Offlinebox.directConvId(state.me, users[0]), kind: "direct", peer: users[0], started: true, last_active_ms: Date.now() };
    } else {
      const id = groupIdOf(name);
      if (state.convs.has(id)) throw new Error(`${id} exists already`);
      await state.api.send(Offlinebox.groupFounding({ convId: id, sender: state.me, members: users }));
      c = { conv_id: id, kind: "group", started: true, last_active_ms: Date.now() };
    }
    if (!state.convs.has(c.conv_id)) { state.started.set(c.conv_id, c); state.convs.set(c.conv_id, c); }
    $("new-with").value = "";
    $("new-group").value = "";
    renderList();
    await openConv(c.conv_id);
    wake(0);
  } catch (e2) {
    err.textContent = e2.message;
  }
});

// showMembers names a group's members and their count in its header. A
// group founded a moment ago may not be sequenced yet: it asks again.
async function showMembers(c, tries = 10) {
  if (!(c.kind === "group" || c.conv_id.startsWith("g-"))) return;
  try {
    const m = await state.api.members(c.conv_id);
    if (!state.open || state.open.conv_id !== c.conv_id) return;
    const names = m.members.map((u) => (u === state.me ? "you" : u));
    $("conv-sub").textContent = `${m.count} members: ${names.join(", ")}${m.truncated ? ", …" : ""}`;
  } catch (e) {
    if (tries > 1 && state.open && state.open.conv_id === c.conv_id) setTimeout(() => showMembers(c, tries - 1), 500);
  }
}
