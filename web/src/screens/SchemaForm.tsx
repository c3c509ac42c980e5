import { useId } from "react";

// A form generated from an operation's JSON schema (the `operations` query's
// optionsSchema): strings with an enum as selects, numbers with their bounds, booleans
// as checkboxes, arrays of strings as lists, objects as nested groups. Only fields the
// person sets are sent, so the server's defaults apply to the rest.

export interface JSONSchema {
  type?: string;
  description?: string;
  enum?: unknown[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  maxLength?: number;
  items?: JSONSchema;
  properties?: Record<string, JSONSchema>;
  required?: string[];
}

export type Values = Record<string, unknown>;

/** The options object to send: set fields only, empty nested groups dropped. */
export function optionsOf(values: Values): Values {
  const out: Values = {};
  for (const [k, v] of Object.entries(values)) {
    if (v === undefined || v === "") continue;
    if (v && typeof v === "object" && !Array.isArray(v)) {
      const inner = optionsOf(v as Values);
      if (Object.keys(inner).length) out[k] = inner;
    } else out[k] = v;
  }
  return out;
}

function label(name: string) {
  return name.replaceAll("_", " ");
}

function Field({ name, schema, value, required, onChange, path }: { name: string; schema: JSONSchema; value: unknown; required: boolean; onChange: (v: unknown) => void; path: string }) {
  const id = useId();
  const hint = schema.description;
  const def = schema.default !== undefined ? `default ${JSON.stringify(schema.default)}` : "";
  const help = (
    <small id={id + "-help"} className="muted" title={hint}>
      {hint}
      {def && !hint?.includes("Default") ? ` (${def})` : ""}
    </small>
  );
  const common = { id, "aria-describedby": hint || def ? id + "-help" : undefined, name: path };
  if (schema.enum) {
    // A choice among the schema's values, of whatever type; empty leaves the default.
    const numeric = schema.type === "integer" || schema.type === "number";
    return (
      <div className="field">
        <label htmlFor={id}>{label(name)}{required && " *"}</label>
        <select {...common} value={value === undefined ? "" : String(value)} onChange={(e) => onChange(e.target.value === "" ? undefined : numeric ? Number(e.target.value) : e.target.value)}>
          <option value="">{schema.default !== undefined ? `default (${String(schema.default)})` : "—"}</option>
          {schema.enum.map((o) => (
            <option key={String(o)} value={String(o)}>{String(o)}</option>
          ))}
        </select>
        {help}
      </div>
    );
  }
  switch (schema.type) {
    case "boolean":
      return (
        <div className="field">
          <label htmlFor={id}>{label(name)}</label>
          <select {...common} value={value === undefined ? "" : String(value)} onChange={(e) => onChange(e.target.value === "" ? undefined : e.target.value === "true")}>
            <option value="">{schema.default !== undefined ? `default (${String(schema.default)})` : "—"}</option>
            <option value="true">true</option>
            <option value="false">false</option>
          </select>
          {help}
        </div>
      );
    case "integer":
    case "number":
      return (
        <div className="field">
          <label htmlFor={id}>{label(name)}{required && " *"}</label>
          <input
            {...common}
            type="number"
            inputMode={schema.type === "integer" ? "numeric" : "decimal"}
            step={schema.type === "integer" ? 1 : "any"}
            min={schema.minimum}
            max={schema.maximum}
            required={required}
            placeholder={schema.default !== undefined ? String(schema.default) : schema.minimum !== undefined && schema.maximum !== undefined ? `${schema.minimum}–${schema.maximum}` : ""}
            value={value === undefined ? "" : String(value)}
            onChange={(e) => onChange(e.target.value === "" ? undefined : Number(e.target.value))}
          />
          {help}
        </div>
      );
    case "array":
      return (
        <div className="field">
          <label htmlFor={id}>{label(name)}{required && " *"}</label>
          <input
            {...common}
            placeholder="comma-separated"
            value={Array.isArray(value) ? value.join(", ") : ""}
            onChange={(e) => {
              const parts = e.target.value.split(",").map((s) => s.trim()).filter(Boolean);
              const items = schema.items?.type === "integer" || schema.items?.type === "number" ? parts.map(Number) : parts;
              onChange(items.length ? items : undefined);
            }}
          />
          {help}
        </div>
      );
    case "object":
      return (
        <fieldset className="field-group">
          <legend>{label(name)}</legend>
          {hint && <small className="muted">{hint}</small>}
          <SchemaFields schema={schema} values={(value as Values) ?? {}} onChange={(v) => onChange(v)} path={path} />
        </fieldset>
      );
    default:
      return (
        <div className="field">
          <label htmlFor={id}>{label(name)}{required && " *"}</label>
          <input
            {...common}
            maxLength={schema.maxLength}
            required={required}
            placeholder={schema.default !== undefined ? String(schema.default) : ""}
            value={(value as string) ?? ""}
            onChange={(e) => onChange(e.target.value || undefined)}
          />
          {help}
        </div>
      );
  }
}

export function SchemaFields({ schema, values, onChange, path = "" }: { schema: JSONSchema; values: Values; onChange: (v: Values) => void; path?: string }) {
  const props = Object.entries(schema.properties ?? {});
  const req = new Set(schema.required ?? []);
  // Required first, then enums and booleans (the usual choices), then the rest.
  const rank = (s: JSONSchema, n: string) => (req.has(n) ? 0 : s.enum ? 1 : s.type === "boolean" ? 3 : s.type === "object" ? 4 : 2);
  props.sort(([a, sa], [b, sb]) => rank(sa, a) - rank(sb, b) || a.localeCompare(b));
  if (!props.length) return <p className="muted">This operation takes no options.</p>;
  return (
    <div className="schema-form">
      {props.map(([name, s]) => (
        <Field key={name} name={name} path={path ? `${path}.${name}` : name} schema={s} required={req.has(name)} value={values[name]} onChange={(v) => onChange({ ...values, [name]: v })} />
      ))}
    </div>
  );
}
