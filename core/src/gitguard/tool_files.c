#include "gitguard/tool_files.h"

#include "base/macro.h"

/* One row a path. A folder row takes the folder whole; a row with a prefix
 * takes the matching entries of its folder. Add a row for another tool. */
static const struct tool_file table[] = {
        { ".claude", "settings", ".json", "Claude Code: settings*.json define hooks (shell commands) and MCP servers" },
        { ".mcp.json", NULL, NULL, "Claude Code and others: MCP servers to start" },
        { ".codex", NULL, NULL, "Codex: project config, prompts and hooks" },
        { ".agents", NULL, NULL, "Codex and others: agent definitions and skills" },
        { ".gemini", NULL, NULL, "Gemini CLI: settings, MCP servers, commands" },
        { ".cursor", NULL, NULL, "Cursor: rules, MCP servers" },
        { ".opencode", NULL, NULL, "OpenCode: agents, commands, plugins (code it loads)" },
        { "opencode.json", NULL, NULL, "OpenCode: project config, MCP servers" },
        { "opencode.jsonc", NULL, NULL, "OpenCode: project config, MCP servers" },
        { ".vscode/tasks.json", NULL, NULL, "VS Code: tasks, some run when the folder opens" },
        { ".vscode/settings.json", NULL, NULL, "VS Code: settings naming programs it runs" },
        { ".vscode/launch.json", NULL, NULL, "VS Code: programs a debug session starts" },
        { ".idea", NULL, NULL, "JetBrains IDEs: run configurations, startup tasks" },
        { ".envrc", NULL, NULL, "direnv: shell code run on entering the folder" },
        { ".devcontainer", NULL, NULL, "Dev Containers: images, mounts, commands run on creation" },
        { ".devcontainer.json", NULL, NULL, "Dev Containers: images, mounts, commands run on creation" },
        { ".husky", NULL, NULL, "husky: git hooks (git's core.hooksPath)" },
        { ".pre-commit-config.yaml", NULL, NULL, "pre-commit: hooks its git hook runs" },
        { "lefthook.yml", NULL, NULL, "lefthook: git hooks" },
        { ".lefthook.yml", NULL, NULL, "lefthook: git hooks" },
        { "lefthook.yaml", NULL, NULL, "lefthook: git hooks" },
        { ".lefthook.yaml", NULL, NULL, "lefthook: git hooks" },
        { ".gitmodules", NULL, NULL, "git: submodule URLs the host fetches" },
        { ".gitattributes", NULL, NULL, "git: filter and diff drivers per path" },
};

const struct tool_file *tool_files(size_t *n)
{
        *n = TB_ARRAY_SIZE(table);
        return table;
}
