import { Empty, PageHeader } from "../ui/ui";

/** A screen whose API is not served yet. */
export function Placeholder({ title, what }: { title: string; what: string }) {
  return (
    <div className="page">
      <PageHeader title={title} />
      <section className="card">
        <Empty title={`${title} arrive with organization management`}>{what}</Empty>
      </section>
    </div>
  );
}
