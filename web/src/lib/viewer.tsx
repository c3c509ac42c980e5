import { createContext, useContext } from "react";

// Who is signed in, as the Viewer query told: screens ask it which actions the role
// allows, to offer only those. The server decides alike whatever the page shows.

export interface ViewerInfo {
  email: string;
  role: string;
  scopes: string[];
  environment: string;
  organization: { id: string; name: string };
  project: { id: string; name: string };
}

export const ViewerContext = createContext<ViewerInfo | null>(null);

export function useViewer(): ViewerInfo | null {
  return useContext(ViewerContext);
}

/**
 * Whether the signed-in person's role holds scope; false until the viewer is known
 * (a screen may open before it is): an action comes on once the role allows it.
 */
export function useCan(scope: string): boolean {
  const v = useViewer();
  return !!v && v.scopes.includes(scope);
}

/** The sentence under an action the role does not allow. */
export function notAllowed(role: string | undefined): string {
  return `Your role (${role ?? "unknown"}) does not allow this.`;
}
