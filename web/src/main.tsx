import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { Provider } from "urql";
import { newClient } from "./lib/graphql";
import { App } from "./App";
import "./styles.css";

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <Provider value={newClient()}>
      <App />
    </Provider>
  </StrictMode>,
);
