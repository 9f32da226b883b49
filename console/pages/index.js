// The console's pages, in the navigation's order. A page is a module with an `id` (its
// route), a `title`, and `render(view)` answering a node (view: app.js showPage).

import * as memory from "./memory.js";
import * as history from "./history.js";
import * as review from "./review.js";
import * as events from "./events.js";
import * as governance from "./governance.js";

export const PAGES = [memory, history, review, events, governance];
