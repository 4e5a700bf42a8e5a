/* Secret places: the host paths a session must never see, whatever the
 * toolchain rules bind (ssh and gpg keys, cloud and registry credentials,
 * other Harnesses' logins, trialbox's own Credentials). The list lives in
 * one table in secret_places.c; add a row there, or name more places at run
 * time in TRIALBOX_SECRET_PLACES.
 *
 * A place is masked only where a bind makes it visible: for each bind of a
 * host folder that contains an existing place, an empty tmpfs (a folder) or
 * /dev/null (a file) goes over the place's path in the sandbox, right after
 * that bind. Binds added later stay on top: a login a plugin binds on
 * purpose inside a masked place (Grok's Trials home) is still seen. */
#ifndef TB_SECRET_PLACES_H
#define TB_SECRET_PLACES_H

#include "sandbox/spec.h"
#include "base/strv.h"

/* Where the places are: each is NULL, or an absolute host path. The XDG
 * folders and the Cargo home default to their usual places under `home`;
 * when set elsewhere, the places under both are masked. */
struct secret_homes {
        const char *home;        /* the host user's real home */
        const char *config_home; /* XDG_CONFIG_HOME */
        const char *data_home;   /* XDG_DATA_HOME */
        const char *state_home;  /* XDG_STATE_HOME */
        const char *cargo_home;  /* CARGO_HOME */
        const char *extra;       /* more places, ':'-separated: absolute, or relative to home (TRIALBOX_SECRET_PLACES) */
        struct path_memo *memo;  /* realpath's answers for one pass (base/path.h), or NULL */
};

/* The absolute host paths of every secret place (existing or not), in table
 * order then `extra`'s, without duplicates. Appended to `out`. With h->memo,
 * each folder that holds many of them (the home) is listed for it once
 * (path_memo_list), so that resolving them through it costs no readlink(2)
 * for each place that is not there. */
void secret_places_list(const struct secret_homes *h, struct strv *out);

/* Does the file at `path` name a registry `token` (a Cargo config.toml)?
 * Such a file is a secret place; one without is not. A file that cannot be
 * read as a regular file of at most 1 MiB counts as holding one. */
bool secret_file_has_token(const char *path);

/* Mask every existing secret place that a bind in `spec` makes visible (see
 * above). Call it once the spec has all its binds. */
void secret_places_mask(struct sandbox_spec *spec, const struct secret_homes *h);

#endif
