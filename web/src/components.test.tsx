import { describe, expect, it, afterEach } from "vitest";
import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import { useState } from "react";
import { optionsOf, SchemaFields, type JSONSchema, type Values } from "./screens/SchemaForm";
import { accepts } from "./screens/Run";
import { Client, Provider } from "urql";
import { authHeaders, connectionParams, csrfToken, hasCredentials } from "./lib/auth";
import { browserName } from "./screens/Account";
import { SignIn } from "./screens/SignIn";
import { ErrorBox, Progress, StateBadge, Time } from "./ui/ui";
import { changedQuery, match } from "./lib/router";
import { jobsVariables, prefetchJobs, takePrefetched } from "./screens/jobsQuery";
import { bytes, jobDuration, utcTime } from "./lib/format";
import { renderMarkdown } from "./lib/markdown";
import { AdminPage } from "./ui/admin";
import { ViewerContext, type ViewerInfo } from "./lib/viewer";

afterEach(cleanup);

const convertSchema: JSONSchema = {
  type: "object",
  properties: {
    format: { type: "string", enum: ["jpeg", "png", "webp"], default: "webp", description: "Output format. Default webp." },
    width: { type: "integer", minimum: 1, maximum: 16384, description: "Target width in pixels." },
    enlarge: { type: "boolean", default: true },
    pages: { type: "array", items: { type: "integer" } },
    crop: { type: "object", properties: { left: { type: "integer" } } },
  },
};

function Form({ onValues }: { onValues: (v: Values) => void }) {
  const [values, setValues] = useState<Values>({});
  return (
    <SchemaFields
      schema={convertSchema}
      values={values}
      onChange={(v) => {
        setValues(v);
        onValues(optionsOf(v));
      }}
    />
  );
}

describe("the options form generated from a JSON schema", () => {
  it("makes a labelled control per property, with the schema's bounds and choices", () => {
    render(<Form onValues={() => {}} />);
    const format = screen.getByLabelText("format") as HTMLSelectElement;
    expect([...format.options].map((o) => o.value)).toEqual(["", "jpeg", "png", "webp"]);
    expect(format.options[0].textContent).toBe("default (webp)");
    const width = screen.getByLabelText("width") as HTMLInputElement;
    expect(width.type).toBe("number");
    expect(width.min).toBe("1");
    expect(width.max).toBe("16384");
    expect(width.getAttribute("aria-describedby")).toBeTruthy();
    expect(screen.getByLabelText("enlarge").tagName).toBe("SELECT");
    expect(screen.getByRole("group", { name: "crop" })).toBeTruthy();
  });

  it("sends only what was set, typed as the schema says", () => {
    let sent: Values = {};
    render(<Form onValues={(v) => (sent = v)} />);
    fireEvent.change(screen.getByLabelText("format"), { target: { value: "png" } });
    fireEvent.change(screen.getByLabelText("width"), { target: { value: "64" } });
    fireEvent.change(screen.getByLabelText("enlarge"), { target: { value: "false" } });
    fireEvent.change(screen.getByLabelText("pages"), { target: { value: "1, 3" } });
    expect(sent).toEqual({ format: "png", width: 64, enlarge: false, pages: [1, 3] });
    fireEvent.change(screen.getByLabelText("width"), { target: { value: "" } });
    fireEvent.change(screen.getByLabelText("format"), { target: { value: "" } });
    expect(sent).toEqual({ enlarge: false, pages: [1, 3] });
  });
});

describe("run helpers", () => {
  const png = { id: "file_1", filename: "a.png", detectedFormat: { extension: "png", mimeType: "image/png" } };
  const pdf = { id: "file_2", filename: "b.pdf", pages: 12, detectedFormat: { extension: "pdf", mimeType: "application/pdf" } };
  it("matches input formats by extension, MIME type and image/*", () => {
    expect(accepts(["pdf"], pdf)).toBe(true);
    expect(accepts(["pdf"], png)).toBe(false);
    expect(accepts(["image/*"], png)).toBe(true);
    expect(accepts(["application/pdf"], pdf)).toBe(true);
    expect(accepts([], png)).toBe(true);
  });
});

describe("the session's credentials", () => {
  afterEach(() => {
    document.cookie = "filemill_csrf=; max-age=0; path=/";
    localStorage.clear();
  });
  it("repeats the CSRF cookie in a header and sends the chosen project and environment", () => {
    expect(hasCredentials()).toBe(false);
    expect(authHeaders()).toEqual({});
    document.cookie = "other=1; path=/";
    document.cookie = "filemill_csrf=abc%3D; path=/";
    expect(csrfToken()).toBe("abc=");
    localStorage.setItem("filemill.project", "prj_1");
    localStorage.setItem("filemill.environment", "test");
    expect(authHeaders()).toEqual({ "X-CSRF-Token": "abc=", "X-Filemill-Project": "prj_1", "X-Filemill-Environment": "test" });
    expect(connectionParams()).toEqual({ csrfToken: "abc=", project: "prj_1", environment: "test" });
  });
  it("names a session's browser", () => {
    expect(browserName("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36")).toBe("Chrome on X11");
    expect(browserName("")).toBe("unknown browser");
  });
});

describe("sign-in", () => {
  it("asks for an Email and a Password, with a Sign in button", () => {
    const client = new Client({ url: "/graphql", exchanges: [] });
    render(
      <Provider value={client}>
        <SignIn />
      </Provider>,
    );
    expect(screen.getByLabelText("Email")).toHaveProperty("type", "email");
    expect(screen.getByLabelText("Password")).toHaveProperty("type", "password");
    expect(screen.getByRole("button", { name: "Sign in" })).toBeTruthy();
  });
});

describe("states and values", () => {
  it("shows an error's code and request id", () => {
    render(<ErrorBox error={{ code: "payment_required", message: "Not enough credits", requestId: "req_01ABC", param: "options.width" }} />);
    const alert = screen.getByRole("alert");
    expect(alert.textContent).toContain("Not enough credits");
    expect(alert.textContent).toContain("payment_required");
    expect(alert.textContent).toContain("req_01ABC");
    expect(alert.textContent).toContain("options.width");
  });
  it("shows a time in the reader's zone with the exact UTC time on hover", () => {
    render(<Time iso="2026-11-27T09:05:07.123Z" />);
    const t = document.querySelector("time")!;
    expect(t.getAttribute("title")).toBe("2026-11-27 09:05:07 UTC");
    expect(t.getAttribute("dateTime")).toBe("2026-11-27T09:05:07.123Z");
    expect(utcTime("2026-01-02T03:04:05Z")).toBe("2026-01-02 03:04:05 UTC");
  });
  it("exposes progress to assistive technology", () => {
    render(<Progress value={42.4} label="Upload of a.bin" />);
    const bar = screen.getByRole("progressbar", { name: "Upload of a.bin" });
    expect(bar.getAttribute("aria-valuenow")).toBe("42");
  });
  it("writes states as text", () => {
    render(<StateBadge state="awaiting_upload" />);
    expect(screen.getByText("awaiting upload")).toBeTruthy();
  });
  it("formats sizes and durations", () => {
    expect(bytes(30_000_000)).toBe("29 MB");
    expect(bytes(512)).toBe("512 B");
    expect(jobDuration("2026-01-01T00:00:00Z", "2026-01-01T00:00:01.500Z")).toBe("1.5 s");
    expect(jobDuration(null, null)).toBe("—");
  });
});

describe("routing and markdown", () => {
  it("matches paths with parameters", () => {
    expect(match("/jobs/:id", "/jobs/job_1")).toEqual({ id: "job_1" });
    expect(match("/jobs/:id", "/jobs")).toBeNull();
    expect(match("/jobs/:id/ai-ready", "/jobs/job_1/ai-ready")).toEqual({ id: "job_1" });
  });
  it("shows a document's raw HTML as text and keeps only safe links", () => {
    const html = renderMarkdown('# T\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1)) [y](https://example.com)');
    expect(html).not.toContain("<script>");
    expect(html).toContain("&lt;script&gt;");
    expect(html).not.toContain("javascript:");
    expect(html).toContain('href="https://example.com"');
  });
});

describe("a screen only admins use", () => {
  const as = (role: string, scopes: string[]): ViewerInfo => ({
    email: role + "@example.com",
    role,
    scopes,
    environment: "live",
    organization: { id: "org_1", name: "acme" },
    project: { id: "prj_1", name: "web" },
  });
  const page = (v: ViewerInfo) =>
    render(
      <ViewerContext.Provider value={v}>
        <AdminPage title="Keys" subtitle="API keys." action="Create key" onAction={() => {}}>
          <p>the keys</p>
        </AdminPage>
      </ViewerContext.Provider>,
    );
  it("shows admins its body and its action", () => {
    page(as("admin", ["manage"]));
    expect(screen.getByText("the keys")).toBeTruthy();
    expect((screen.getByRole("button", { name: "Create key" }) as HTMLButtonElement).disabled).toBe(false);
  });
  it("keeps its action off and its body out until the viewer is known", () => {
    render(
      <ViewerContext.Provider value={null}>
        <AdminPage title="Keys" subtitle="API keys." action="Create key" onAction={() => {}}>
          <p>the keys</p>
        </AdminPage>
      </ViewerContext.Provider>,
    );
    expect(screen.queryByText("the keys")).toBeNull();
    expect(screen.queryByText("Keys are managed by admins")).toBeNull();
    expect((screen.getByRole("button", { name: "Create key" }) as HTMLButtonElement).disabled).toBe(true);
  });
  it("tells other roles why, with the action disabled", () => {
    page(as("developer", ["jobs:write"]));
    expect(screen.queryByText("the keys")).toBeNull();
    expect(screen.getByText("Keys are managed by admins")).toBeTruthy();
    const b = screen.getByRole("button", { name: "Create key" }) as HTMLButtonElement;
    expect(b.disabled).toBe(true);
    expect(b.title).toBe("Your role (developer) does not allow this.");
  });
});

describe("the jobs screen's address", () => {
  it("maps the state filter and the page to the query's variables", () => {
    expect(jobsVariables(new URLSearchParams("state=failed&after=job_2&prev=~"))).toEqual({ state: "failed", first: 25, after: "job_2" });
    expect(jobsVariables(new URLSearchParams("state=nonsense"))).toEqual({ state: undefined, first: 25, after: undefined });
  });
  it("changes a query's parameters, removing the emptied ones", () => {
    expect(changedQuery(new URLSearchParams("state=failed&after=job_2"), { state: "queued", after: null }).toString()).toBe("state=queued");
  });
  it("hands a prefetched page to the first screen asking for the same variables, once", () => {
    const client = new Client({ url: "http://127.0.0.1:1/graphql", exchanges: [] });
    prefetchJobs(client, new URLSearchParams("state=queued"));
    expect(takePrefetched(jobsVariables(new URLSearchParams("state=failed")))).toBeNull();
    prefetchJobs(client, new URLSearchParams("state=queued"));
    const v = jobsVariables(new URLSearchParams("state=queued"));
    expect(takePrefetched(v)).toBe(JSON.stringify(v));
    expect(takePrefetched(v)).toBeNull();
  });
});
