package agents

const (
	gmailModify   = "https://www.googleapis.com/auth/gmail.modify"
	gmailSend     = "https://www.googleapis.com/auth/gmail.send"
	calendarEvent = "https://www.googleapis.com/auth/calendar.events"
	graphMailRW   = "https://graph.microsoft.com/Mail.ReadWrite"
	graphMailSend = "https://graph.microsoft.com/Mail.Send"
	graphCalRW    = "https://graph.microsoft.com/Calendars.ReadWrite"
)

// Builtins returns grantwire's built-in agents: the agents a host application ships that
// every installation knows. builtin:chat consumes MCP servers (it can be activated on any
// MCP connector, granted "use"); the others declare what they need.
func Builtins() []Agent {
	return []Agent{
		{
			ID: "builtin:chat", Name: "Chat",
			Description:        "The general assistant; loads whichever MCP servers are activated for it.",
			ConsumesMCPServers: true,
		},
		{
			ID: "builtin:email", Name: "Email",
			Description: "Triages, labels and drafts replies to your mail.",
			RequiredConnectors: []Requirement{
				{Connector: "google", Scopes: []string{gmailModify, gmailSend}, Reason: "Read, label and send your Gmail"},
				{Connector: "microsoft", Scopes: []string{graphMailRW, graphMailSend}, Reason: "Read, file and send your Outlook.com mail"},
				{Connector: "microsoft_work", Scopes: []string{graphMailRW, graphMailSend}, Reason: "Read, file and send your work mail"},
			},
		},
		{
			ID: "builtin:calendar", Name: "Calendar",
			Description: "Finds free time and schedules meetings.",
			RequiredConnectors: []Requirement{
				{Connector: "google", Scopes: []string{calendarEvent}, Reason: "Read and create events in your Google Calendar"},
				{Connector: "microsoft", Scopes: []string{graphCalRW}, Reason: "Read and create events in your Outlook.com calendar"},
				{Connector: "microsoft_work", Scopes: []string{graphCalRW}, Reason: "Read and create events in your work calendar"},
			},
		},
		{
			ID: "builtin:code", Name: "Code",
			Description: "Works on repositories: history, issues and pull requests.",
			RequiredConnectors: []Requirement{
				{Connector: "mcp-git", Scopes: []string{"use"}, Reason: "Read and change local Git repositories"},
				{Connector: "mcp-github", Scopes: []string{"use"}, Reason: "Read issues and pull requests on GitHub"},
			},
		},
		{
			ID: "builtin:research", Name: "Research",
			Description: "Searches the web and reads pages to answer questions with sources.",
			RequiredConnectors: []Requirement{
				{Connector: "mcp-brave-search", Scopes: []string{"use"}, Reason: "Search the web"},
				{Connector: "mcp-tavily", Scopes: []string{"use"}, Reason: "Search and extract web pages"},
				{Connector: "mcp-fetch", Scopes: []string{"use"}, Reason: "Read the pages it cites"},
			},
		},
	}
}
