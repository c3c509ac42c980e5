import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { Provider } from "urql";
import { newClient } from "./lib/graphql";
import { App, startLoading } from "./App";
import "./styles.css";

const client = newClient();
startLoading(client, location.pathname);

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <Provider value={client}>
      <App />
    </Provider>
  </StrictMode>,
);
