import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { Provider } from "urql";
import { newClient } from "./lib/graphql";
import { App, startLoading } from "./App";
import "./styles.css";

const client = newClient();
// The first render waits for the screen's chunk (fetched beside the Viewer query).
void startLoading(client, location.pathname, location.search)
  .catch(() => undefined) // a chunk that failed to load is fetched again as its screen renders
  .then(() =>
    createRoot(document.getElementById("root")!).render(
      <StrictMode>
        <Provider value={client}>
          <App />
        </Provider>
      </StrictMode>,
    ),
  );
