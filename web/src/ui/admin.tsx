import type { ReactNode } from "react";
import { notAllowed, useCan, useViewer } from "../lib/viewer";
import { Card, Empty, Loading, PageHeader } from "./ui";

/**
 * A screen only admins use (scope manage): its header with the primary action, which
 * other roles see disabled with the reason, then the screen's body for admins and a
 * note for everyone else. The server refuses those actions alike.
 */
export function AdminPage({ title, subtitle, action, onAction, children }: { title: string; subtitle: ReactNode; action: string; onAction: () => void; children: ReactNode }) {
  const can = useCan("manage");
  const viewer = useViewer();
  return (
    <div className="page">
      <PageHeader
        title={title}
        subtitle={subtitle}
        actions={
          <button type="button" className="btn btn-primary" disabled={!can} title={can ? undefined : notAllowed(viewer?.role)} onClick={onAction}>
            {action}
          </button>
        }
      />
      {!viewer ? (
        // The screen opened before the viewer was known: its role decides what follows.
        <Loading />
      ) : can ? (
        children
      ) : (
        <Card>
          <Empty title={`${title} are managed by admins`}>{notAllowed(viewer?.role)}</Empty>
        </Card>
      )}
    </div>
  );
}
