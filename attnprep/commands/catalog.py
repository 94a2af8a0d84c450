"""(placeholder: commands of this area are registered here)"""
