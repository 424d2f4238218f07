//! The kubeconfig schema (client-go's `clientcmd/api/v1`) read from YAML
//! nodes: one file's clusters, users and contexts, as written. Pure; what
//! kubectl does with several files is `load`'s.

use serde_json::Value;

use crate::access::yaml::{parse_yaml, Fields, Node};

/// The cluster extension `provideClusterInfo` hands to the plugin as `config`.
const EXEC_EXTENSION: &str = "client.authentication.k8s.io/exec";

/// One kubeconfig file.
#[derive(Default, Clone)]
pub(super) struct File {
    pub(super) current_context: Option<String>,
    pub(super) clusters: Vec<(String, Cluster)>,
    pub(super) users: Vec<(String, User)>,
    pub(super) contexts: Vec<(String, Context)>,
}

#[derive(Default, Clone)]
pub(super) struct Cluster {
    pub(super) server: Option<String>,
    pub(super) certificate_authority: Option<String>,
    pub(super) certificate_authority_data: Option<String>,
    pub(super) insecure_skip_tls_verify: bool,
    pub(super) tls_server_name: Option<String>,
    pub(super) proxy_url: Option<String>,
    pub(super) disable_compression: bool,
    /// The `client.authentication.k8s.io/exec` extension, as JSON.
    pub(super) exec_extension: Option<Value>,
}

#[derive(Default, Clone)]
pub(super) struct User {
    pub(super) token: Option<String>,
    pub(super) token_file: Option<String>,
    pub(super) client_certificate: Option<String>,
    pub(super) client_certificate_data: Option<String>,
    pub(super) client_key: Option<String>,
    pub(super) client_key_data: Option<String>,
    pub(super) username: Option<String>,
    pub(super) password: Option<String>,
    pub(super) exec: Option<Exec>,
    pub(super) auth_provider: bool,
}

#[derive(Default, Clone)]
pub(super) struct Exec {
    pub(super) api_version: String,
    pub(super) command: String,
    pub(super) args: Vec<String>,
    pub(super) env: Vec<(String, String)>,
    pub(super) interactive_mode: Option<String>,
    pub(super) provide_cluster_info: bool,
    pub(super) install_hint: Option<String>,
}

#[derive(Default, Clone)]
pub(super) struct Context {
    pub(super) cluster: String,
    pub(super) user: String,
    pub(super) namespace: Option<String>,
}

/// A kubeconfig file's text as the model; `None` YAML (an empty file) is an
/// empty model. Errors name a line and a column, never a value.
pub(super) fn parse(text: &str) -> Result<File, String> {
    match parse_yaml(text)? {
        None => Ok(File::default()),
        Some(root) if root.is_null() => Ok(File::default()),
        Some(root) => read_model(&root),
    }
}

fn read_model(root: &Node) -> Result<File, String> {
    let top = Fields::new(root, "")?;
    let mut file = File {
        current_context: top.text("current-context")?,
        ..File::default()
    };
    for (name, body) in top.named("clusters", "cluster")? {
        let Some(c) = body else { continue };
        let mut exec_extension = None;
        if let Some(list) = c.raw("extensions") {
            for item in list.items(&c.what("extensions"))? {
                let ext = Fields::new(item, &c.what("extensions[]"))?;
                if ext.str("name")?.as_deref() == Some(EXEC_EXTENSION) {
                    exec_extension = ext.raw("extension").map(Node::to_json);
                }
            }
        }
        file.clusters.push((
            name,
            Cluster {
                server: c.text("server")?,
                certificate_authority: c.text("certificate-authority")?,
                certificate_authority_data: c.text("certificate-authority-data")?,
                insecure_skip_tls_verify: c.bool("insecure-skip-tls-verify")?,
                tls_server_name: c.text("tls-server-name")?,
                proxy_url: c.text("proxy-url")?,
                disable_compression: c.bool("disable-compression")?,
                exec_extension,
            },
        ));
    }
    for (name, body) in top.named("users", "user")? {
        let Some(u) = body else { continue };
        let exec = match u.map("exec")? {
            None => None,
            Some(e) => {
                let mut env = Vec::new();
                if let Some(list) = e.raw("env") {
                    for item in list.items(&e.what("env"))? {
                        let v = Fields::new(item, &e.what("env[]"))?;
                        env.push((
                            v.str("name")?.unwrap_or_default(),
                            v.str("value")?.unwrap_or_default(),
                        ));
                    }
                }
                Some(Exec {
                    api_version: e.str("apiVersion")?.unwrap_or_default(),
                    command: e.str("command")?.unwrap_or_default(),
                    args: e.strings("args")?,
                    env,
                    interactive_mode: e.text("interactiveMode")?,
                    provide_cluster_info: e.bool("provideClusterInfo")?,
                    install_hint: e.text("installHint")?,
                })
            }
        };
        file.users.push((
            name,
            User {
                token: u.text("token")?,
                token_file: u.text("tokenFile")?,
                client_certificate: u.text("client-certificate")?,
                client_certificate_data: u.text("client-certificate-data")?,
                client_key: u.text("client-key")?,
                client_key_data: u.text("client-key-data")?,
                username: u.text("username")?,
                password: u.text("password")?,
                exec,
                auth_provider: u.raw("auth-provider").is_some_and(|n| !n.is_null()),
            },
        ));
    }
    for (name, body) in top.named("contexts", "context")? {
        let Some(c) = body else { continue };
        file.contexts.push((
            name,
            Context {
                cluster: c.str("cluster")?.unwrap_or_default(),
                user: c.str("user")?.unwrap_or_default(),
                namespace: c.text("namespace")?,
            },
        ));
    }
    unique("cluster", &file.clusters)?;
    unique("user", &file.users)?;
    unique("context", &file.contexts)?;
    Ok(file)
}

/// client-go decodes the named lists of one file into maps and refuses a
/// name given twice (`clientcmd/api/v1/conversion.go`: `error converting
/// *[]NamedCluster into *map[string]*api.Cluster: duplicate name "%v" in
/// list: %v`, likewise for NamedAuthInfo and NamedContext); kubectl then
/// fails on the file. Its message prints the whole list, secrets included;
/// this one names the kind and the name.
fn unique<T>(kind: &str, list: &[(String, T)]) -> Result<(), String> {
    for (i, (name, _)) in list.iter().enumerate() {
        if list[..i].iter().any(|(n, _)| n == name) {
            return Err(format!(
                "two {kind}s named {name:?} (client-go refuses the file: \"duplicate name in list\")"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_of_the_wrong_type_is_named_with_its_place() {
        let root = parse_yaml("users:\n- name: u\n  user:\n    token: 20240917\n")
            .unwrap()
            .unwrap();
        let e = read_model(&root).err().unwrap();
        assert_eq!(
            e,
            "line 4 column 12: `users[].user.token` must be a string, not a number (quote it)"
        );
    }

    #[test]
    fn a_name_given_twice_in_one_file_is_refused_as_client_go_refuses_it() {
        for kind in ["cluster", "user", "context"] {
            let text = format!(
                "{kind}s:\n- name: a\n  {kind}: {{}}\n- name: b\n  {kind}: {{}}\n- name: a\n  {kind}: {{}}\n"
            );
            let e = parse(&text).err().unwrap();
            assert_eq!(
                e,
                format!("two {kind}s named \"a\" (client-go refuses the file: \"duplicate name in list\")")
            );
        }
        // One name per kind: a cluster, a user and a context may share it.
        let ok = "clusters:\n- name: a\n  cluster: {}\nusers:\n- name: a\n  user: {}\ncontexts:\n- name: a\n  context: {}\n";
        assert!(parse(ok).is_ok());
    }
}
