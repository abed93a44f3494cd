// boot hands the client module (offlinebox.js, clients/js as served)
// to the page's classic scripts, which run after it (all are deferred).
import * as offlinebox from "/static/offlinebox.js";

window.Offlinebox = offlinebox;
window.Api = offlinebox.Api;
window.ApiError = offlinebox.ApiError;
window.sleep = offlinebox.sleep;
window.OfflineboxLive = { connect: (api, hooks) => offlinebox.connectLive(api, hooks) };
