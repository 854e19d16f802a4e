-- EMQ.RESUME's twin (after shared.lua). ARGV = lane
return set_paused('resume', false)
